// Group commit per key (a tenant): a call made while the same key's previous call is in flight
// waits for it and goes with every other call that waited, as one script run: one round trip and
// one script's commands for the whole group instead of one per call. A call with nothing in
// flight goes in the event loop's next check phase (setImmediate), so the calls of every I/O
// callback of the same loop turn go together (the requests read and the answers received in
// it), and a lone request waits for nothing but the rest of its turn; the Redis client writes
// its commands at that moment too (./client.ts, write coalescing). Under load a tenant's calls
// share round trips and Redis's work (measured in docs/performance.md: at 10 connections the
// check phase rather than the current tick took a chat's script runs from 0.81 to 0.29). The
// script handles the group's calls in their order, each exactly as it would alone. A failed run
// fails every call of its group (each caller's own error handling then applies: a request
// refused with 503, a settlement retried).

/** A key's waiting calls: their inputs (as `run` takes them) and their callers, in order. */
interface Queue<I, O> {
  inputs: I[];
  callers: { done: (o: O) => void; fail: (e: unknown) => void }[];
}

export class KeyedBatches<I, O> {
  private readonly run: (key: string, inputs: I[]) => Promise<O[]>;
  private readonly max: number;
  private readonly joined: ((a: I, b: I) => boolean) | undefined;
  private readonly waiting = new Map<string, Queue<I, O>>();

  /**
   * `run` answers one output per input, in order; at most `max` inputs go together, and a group
   * is never cut between two inputs that `joined` says go together (one request's gated steps).
   */
  constructor(run: (key: string, inputs: I[]) => Promise<O[]>, max = 64, joined?: (a: I, b: I) => boolean) {
    this.run = run;
    this.max = max;
    this.joined = joined;
  }

  call(key: string, input: I): Promise<O> {
    return new Promise<O>((done, fail) => {
      let queue = this.waiting.get(key);
      if (!queue) {
        this.waiting.set(key, (queue = { inputs: [], callers: [] }));
        setImmediate(() => void this.fly(key, queue!));
      }
      queue.inputs.push(input);
      queue.callers.push({ done, fail });
    });
  }

  /** Runs the key's waiting calls, group after group, until none waits; then the key is free. */
  private async fly(key: string, queue: Queue<I, O>): Promise<void> {
    while (queue.inputs.length) {
      // The whole queue when it fits (the usual case: no copy), else its first `max`.
      let { inputs, callers } = queue;
      if (inputs.length > this.max) {
        let cut = this.max;
        while (cut > 1 && this.joined?.(inputs[cut - 1]!, inputs[cut]!)) cut--;
        inputs = inputs.splice(0, cut);
        callers = callers.splice(0, cut);
      } else {
        queue.inputs = [];
        queue.callers = [];
      }
      try {
        const out = await this.run(key, inputs);
        for (let i = 0; i < callers.length; i++) callers[i]!.done(out[i]!);
      } catch (err) {
        for (const c of callers) c.fail(err);
      }
    }
    this.waiting.delete(key);
  }
}

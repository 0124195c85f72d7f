// Undo steps that must happen but cannot happen now, because the store they write to is away:
// each is tried at once, then again with a growing delay until it succeeds. Used to withdraw
// what a refused request may have written before its store went away (a create's credit hold
// and task, an idempotency claim), so that the refusal holds once the store is back. Keyed,
// so a step is registered once; bounded, so an outage cannot grow it without limit. The steps
// live in this process: one that is still waiting when the process stops is reported.
import { within } from './within.ts';

export interface RetryUntilDoneOptions {
  /** First retry after this (ms), doubling up to `maxDelayMs`. */
  minDelayMs?: number;
  maxDelayMs?: number;
  /** Steps kept at most; beyond, a new one is reported and dropped. */
  limit?: number;
  /** A step failed (`dropped`: given up on: over the limit, or the process is stopping). */
  onError(err: unknown, key: string, dropped: boolean): void;
}

export class RetryUntilDone {
  private readonly steps = new Map<string, () => Promise<void>>();
  private readonly o: Required<RetryUntilDoneOptions>;
  private timer: NodeJS.Timeout | undefined;
  private delayMs: number;
  private running: Promise<void> | undefined;

  constructor(opts: RetryUntilDoneOptions) {
    this.o = { minDelayMs: 100, maxDelayMs: 1000, limit: 100_000, ...opts };
    this.delayMs = this.o.minDelayMs;
  }

  /** Whether the step of `key` is still waiting to be done. */
  has(key: string): boolean {
    return this.steps.has(key);
  }

  /** Try `step` now (not awaited: the caller answers its request meanwhile), and until it succeeds. */
  add(key: string, step: () => Promise<void>): void {
    if (this.steps.has(key)) return;
    if (this.steps.size >= this.o.limit) {
      this.o.onError(new Error(`more than ${this.o.limit} steps waiting`), key, true);
      return;
    }
    this.steps.set(key, step);
    step().then(
      () => this.steps.delete(key),
      () => this.later(),
    );
  }

  /** One last pass (e.g. at shutdown), within `timeoutMs`; what is left is reported as dropped. */
  async flush(timeoutMs: number): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await within(this.pass(), timeoutMs);
    for (const key of this.steps.keys()) this.o.onError(new Error('the process stopped before this step could be done'), key, true);
    this.steps.clear();
  }

  private later(): void {
    if (this.timer || this.steps.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.pass().then(() => this.later());
    }, this.delayMs);
    // Never what keeps a process alive.
    this.timer.unref();
  }

  /** Every waiting step once, one after the other; the delay grows while they keep failing. */
  private pass(): Promise<void> {
    this.running ??= (async () => {
      let failed = 0;
      let lastError: unknown;
      for (const [key, step] of [...this.steps]) {
        try {
          await step();
          this.steps.delete(key);
        } catch (err) {
          failed++;
          lastError = err;
        }
      }
      this.delayMs = failed ? Math.min(this.delayMs * 2, this.o.maxDelayMs) : this.o.minDelayMs;
      if (failed) this.o.onError(lastError, `${failed} step(s)`, false);
    })().finally(() => (this.running = undefined));
    return this.running;
  }
}

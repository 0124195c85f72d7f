// The messages between the `serve --workers` primary and its workers, over node:cluster's IPC
// channel: a question carries an id and its answer the same id, so concurrent scrapes and
// readiness probes never take each other's answers. Every message has a `gw` field, which keeps
// them apart from node:cluster's own and prom-client's.

/** Either end of the channel: a cluster Worker seen from the primary, or `process` in a worker. */
export interface Channel {
  send(message: unknown, sendHandle?: undefined, options?: object, callback?: (err: Error | null) => void): boolean;
  on(event: 'message', listener: (message: any) => void): unknown;
  off(event: 'message', listener: (message: any) => void): unknown;
}

export type Question =
  /** primary → worker: this process's own metrics, as prom-client JSON. */
  | { gw: 'metrics' }
  /** primary → worker: this process's own readiness. */
  | { gw: 'ready' }
  /** worker → primary: the metrics of every worker, summed (for /metrics on the API port). */
  | { gw: 'cluster-metrics' }
  /** worker → primary: whether every other worker is ready (for /readyz). */
  | { gw: 'siblings-ready' };

/** An answer: `problem` says why not (readiness), `text` and `metrics` carry what was asked. */
export interface Answer {
  problem?: string;
  text?: string;
  metrics?: unknown[];
}

/** worker → primary, once: the worker serves (its URL; empty for a worker of role `worker`). */
export interface Started {
  gw: 'started';
  url: string;
}

let nextId = 0;

/** Ask and wait for the answer; rejects after `timeoutMs` or when the message cannot be sent. */
export function ask(channel: Channel, question: Question, timeoutMs: number): Promise<Answer> {
  const id = ++nextId;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      channel.off('message', listen);
      reject(new Error(`no answer to ${question.gw} within ${timeoutMs} ms`));
    }, timeoutMs);
    const listen = (m: { gw?: string; id?: number } & Answer) => {
      if (m?.gw !== 'answer' || m.id !== id) return;
      clearTimeout(timer);
      channel.off('message', listen);
      resolve(m);
    };
    channel.on('message', listen);
    send(channel, { ...question, id }, (err) => {
      clearTimeout(timer);
      channel.off('message', listen);
      reject(err);
    });
  });
}

/** Answer the questions `handlers` knows; an answer that cannot be sent (the other end left) is dropped: nobody waits for it. */
export function answer(channel: Channel, handlers: Partial<Record<Question['gw'], () => Promise<Answer>>>): () => void {
  const listen = (m: { gw?: string; id?: number }) => {
    const handler = m?.gw === undefined ? undefined : handlers[m.gw as Question['gw']];
    if (!handler) return;
    handler().then(
      (a) => send(channel, { gw: 'answer', id: m.id, ...a }),
      (err: unknown) => send(channel, { gw: 'answer', id: m.id, problem: err instanceof Error ? err.message : String(err) }),
    );
  };
  channel.on('message', listen);
  return () => channel.off('message', listen);
}

/** With a callback, a closed channel is an error for the sender, not an 'error' event that would crash the process. */
export function send(channel: Channel, message: unknown, failed: (err: Error) => void = () => {}): void {
  try {
    channel.send(message, undefined, {}, (err) => {
      if (err) failed(err);
    });
  } catch (err) {
    failed(err instanceof Error ? err : new Error(String(err)));
  }
}

// The pool that runs delivery attempts. Production uses Piscina worker threads; an
// in-process variant exists for tools and tests that do not want threads.
import { readFileSync } from 'node:fs';
import type { Piscina } from 'piscina';
import { esmWorker } from '../util/esm-worker.ts';
import type { WebhookConfig } from './config.ts';
import { scaled } from './config.ts';
import { createSender, type SendResult, type SendTask, type SenderOptions } from './sender.ts';

/** What the dispatcher needs from a pool (a Piscina instance fits). */
export interface SendPool {
  /**
   * Resolves once a send handed to `run` starts at once: a thread has loaded the sender. The
   * dispatcher waits for it before reserving a rate-limit slot, so a thread's start-up (about
   * 100-300 ms, more on a loaded machine) never makes a send miss its slot. Never rejects: a
   * pool that cannot start fails the send itself, which is recorded as an attempt.
   */
  ready(): Promise<void>;
  run(task: SendTask): Promise<SendResult>;
  destroy(): Promise<void>;
}

/** `ModelGateway-Webhook/<package.json version>` (spec: `<product>-Webhook/<version>`). */
export const USER_AGENT = `ModelGateway-Webhook/${packageVersion()}`;

export function senderOptions(config: WebhookConfig): SenderOptions {
  return {
    userAgent: USER_AGENT,
    caPem: config.ca_pem,
    allowPrivateCidrs: config.allow_private_cidrs,
    connectTimeoutMs: scaled(config).timeoutMs,
  };
}

/**
 * Worker threads; close with `pool.destroy()` after the scheduler is closed. The threads start
 * with the first delivery, and Piscina itself is imported then: each thread is an isolate of its
 * own (about 25 MB of RSS), and Piscina about 1 MB of heap, that a gateway with no webhook
 * endpoint would hold for nothing.
 */
export function createSendPool(config: WebhookConfig): SendPool {
  let pool: Promise<Piscina<SendTask, SendResult>> | undefined;
  let loaded: Promise<void> | undefined;
  let destroyed = false;
  const start = () => pool ??= import('piscina').then(({ Piscina }) => new Piscina<SendTask, SendResult>({
    ...esmWorker(new URL('./worker.ts', import.meta.url), senderOptions(config)),
    minThreads: 1,
    maxThreads: config.pool_max_threads,
    // Attempts wait on the network, not the CPU: let each thread keep many in flight.
    concurrentTasksPerWorker: config.pool_concurrency_per_thread,
  }));
  return {
    // Piscina marks its first thread ready at once; the thread reads a task only once it has
    // loaded the sender, so a no-op task ('loaded', util/esm-worker.cjs) is what says it has.
    ready: () => loaded ??= destroyed ? Promise.resolve() : start()
      .then((p) => p.run(null as unknown as SendTask, { name: 'loaded' }))
      .then(() => undefined, () => { loaded = undefined; }),
    run: (task) => {
      if (destroyed) return Promise.reject(new Error('the webhook send pool is closed'));
      return start().then((p) => p.run(task));
    },
    destroy: async () => {
      destroyed = true;
      await (await pool)?.destroy();
    },
  };
}

export function createInProcessPool(config: WebhookConfig): SendPool {
  const sender = createSender(senderOptions(config));
  return { ready: () => Promise.resolve(), run: (task) => sender.send(task), destroy: () => sender.close() };
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
  return pkg.version ?? '0.0.0';
}

// Plumbing shared by the benchmarks: child processes that report over IPC, request/reply
// messages, and percentiles.
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = fileURLToPath(new URL('./', import.meta.url));
const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** engine/cli/build.mjs of `tree` (plain JavaScript: no declarations to import it statically). */
interface Build {
  build(): Promise<boolean>;
  DIST: string;
}

/** engine/cli/v8-pool.mjs of a tree (plain JavaScript, like build.mjs). */
interface V8Pool {
  poolFlags(cpus?: number): string[];
  poolChosen(execArgv?: string[], nodeOptions?: string): boolean;
}

/**
 * The node flags of a gateway that a benchmark starts itself (not through `gateway serve`) on
 * `cpus` CPUs: V8's worker pool as `tree`'s shipped start sizes it there (engine/cli/v8-pool.mjs;
 * none from a tree before it), then `own`, the run's flags, which win where they size the pool (as
 * does a --v8-pool-size in `nodeOptions`). So the benchmark measures what `gateway serve` runs.
 */
export async function gatewayFlags(tree: string, cpus: number, own: string[] = [], nodeOptions = ''): Promise<string[]> {
  const file = join(tree, 'engine/cli/v8-pool.mjs');
  if (!existsSync(file)) return own;
  const pool = (await import(pathToFileURL(file).href)) as V8Pool;
  return [...(pool.poolChosen(own, nodeOptions) ? [] : pool.poolFlags(cpus)), ...own];
}

/**
 * What `npm start` runs in `tree`, for `node <it> serve …`: engine/cli/gateway.mjs, with dist/ built
 * first here if it is missing or older than the sources (so no build lands in the gateway's
 * start-up). A tree from before the compiled start (no engine/cli/build.mjs) started
 * engine/cli/main.ts, whose types Node strips: that is what it shipped, so that is what runs.
 */
export async function gatewayCommand(tree: string): Promise<string> {
  const file = join(tree, 'engine/cli/build.mjs');
  if (!existsSync(file)) return join(tree, 'engine/cli/main.ts');
  const { build } = (await import(pathToFileURL(file).href)) as Build;
  if (!(await build())) throw new Error(`${tree}: TypeScript is not installed there, so dist/ cannot be built (npm ci)`);
  return join(tree, 'engine/cli/gateway.mjs');
}

/**
 * A module of this tree's engine as it ships, compiled in dist/ (built first if missing or stale),
 * for the benchmarks that run the gateway in their own process (bench/chat-gateway.ts,
 * bench/media-gateway.ts): `await shipped<typeof import('../engine/gateway.ts')>('gateway.ts')`.
 * Such a process must take every engine module from here: one imported from engine/ as well would
 * be a second copy, with state of its own.
 */
export async function shipped<T>(module: string): Promise<T> {
  const { build, DIST } = (await import(pathToFileURL(join(ROOT, 'engine/cli/build.mjs')).href)) as Build;
  if (!(await build())) throw new Error('TypeScript is not installed, so dist/ cannot be built (npm ci)');
  return (await import(pathToFileURL(join(DIST, module.replace(/\.ts$/, '.js'))).href)) as T;
}

/**
 * Fork bench/<file> and wait for its first IPC message (its "ready", with what it reports).
 * `nice` lowers the priority of peers that stand in for remote machines (stubs, senders).
 */
export function child(file: string, env: Record<string, string> = {}, opts: { execArgv?: string[]; nice?: number } = {}): Promise<{ proc: ChildProcess; msg: any }> {
  const proc = fork(`${HERE}${file}`, { execArgv: opts.execArgv ?? [], env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  if (opts.nice) {
    try {
      setPriority(proc.pid!, opts.nice);
    } catch {
      /* not allowed: the peer keeps its priority */
    }
  }
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.once('message', (msg) => resolve({ proc, msg }));
  });
}

/** Send `msg` and wait for the child's message whose `cmd` is `reply`. */
export function ask<T>(proc: ChildProcess, msg: Record<string, unknown>, reply: string): Promise<T> {
  return new Promise((resolve) => {
    const on = (m: { cmd: string }) => {
      if (m.cmd !== reply) return;
      proc.off('message', on);
      resolve(m as T);
    };
    proc.on('message', on);
    proc.send(msg);
  });
}

/** Ask a child to stop and wait until it has exited. */
export const stop = (p: ChildProcess): Promise<unknown> => new Promise((r) => {
  p.once('exit', r);
  p.send({ cmd: 'stop' });
});

export const pct = (xs: number[], p: number): number => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

/** The model D create the create benchmarks send (bench/throughput.ts, bench/compare.ts). */
export const createRequest = (): Buffer => Buffer.from(JSON.stringify({ prompt: 'a red fox in fresh snow, watercolor', n: 1 }));

/** The chat completion every chat benchmark sends (bench/chat.ts, bench/compare.ts), streamed or not. */
export const chatRequest = (stream: boolean): Buffer =>
  Buffer.from(JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: 'You are a concise assistant. Answer in one short paragraph.' },
      { role: 'user', content: 'Explain in two sentences why the sky looks blue during the day and red at sunset.' },
    ],
    temperature: 0.7,
    max_completion_tokens: 200,
    ...(stream ? { stream: true } : {}),
  }));

/** One kind of request of a paced load (bench/soak.ts, bench/redis-soak.ts). */
export interface PacedKind {
  name: string;
  /** Requests per second. */
  rate: number;
  /** Sends one; answers its status (0: no answer). */
  send: () => Promise<number>;
  inFlight: number;
  due: number;
  done: Record<number, number>;
  skipped: number;
}

export const pacedKind = (name: string, rate: number, send: () => Promise<number>): PacedKind => ({ name, rate, send, inFlight: 0, due: 0, done: {}, skipped: 0 });

/**
 * Paced load, not a closed loop, so every minute is the same minute: every 10 ms each kind sends
 * what its rate makes due; what its in-flight cap refuses is skipped (counted), not queued, so a
 * slow spell does not turn into a burst afterwards. Answers a function that stops it.
 */
export function pace(kinds: PacedKind[], maxInFlight: number): () => void {
  const send = async (k: PacedKind) => {
    k.inFlight++;
    try {
      const status = await k.send();
      k.done[status] = (k.done[status] ?? 0) + 1;
    } catch {
      k.done[0] = (k.done[0] ?? 0) + 1;
    } finally {
      k.inFlight--;
    }
  };
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    const dt = (now - last) / 1000;
    last = now;
    for (const k of kinds) {
      k.due += k.rate * dt;
      for (; k.due >= 1; k.due--) {
        if (k.inFlight >= maxInFlight) k.skipped++;
        else void send(k);
      }
    }
  }, 10);
  return () => clearInterval(timer);
}

/** "chat {200: 1234} create {202: 99} skipped 3" */
export const pacedAnswers = (kinds: PacedKind[]): string => kinds.map((k) => `${k.name} ${JSON.stringify(k.done)}${k.skipped ? ` skipped ${k.skipped}` : ''}`).join(' ');

/** "mean 12.3 MB, min 12.0 (-2.4%), max 12.6 (2.4%); first 12.1, last 12.5 MB" of a soak's samples. */
export function spreadSummary(values: number[], mb: (bytes: number) => number | string): string {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const spread = (v: number) => `${((v / mean - 1) * 100).toFixed(1)}%`;
  const [min, max] = [Math.min(...values), Math.max(...values)];
  return `mean ${mb(mean)} MB, min ${mb(min)} (${spread(min)}), max ${mb(max)} (${spread(max)}); first ${mb(values[0]!)}, last ${mb(values.at(-1)!)} MB`;
}

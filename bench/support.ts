// Plumbing shared by the benchmarks: child processes that report over IPC, request/reply
// messages, and percentiles.
import { fork, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(new URL('./', import.meta.url));

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

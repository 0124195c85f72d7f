// `gateway serve` in a child process that records every module it loads: for the tests of what a
// fresh gateway holds (test/engine/idle-footprint) and of what the shipped start runs
// (test/tooling/shipped-start).
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './gateway.ts';

/** Records every module the process loads; prints them (and Node's own modules) on SIGUSR2. */
const RECORDER = `
import { registerHooks } from 'node:module';
const loaded = new Set();
registerHooks({ load(url, context, next) { loaded.add(url); return next(url, context); } });
process.on('SIGUSR2', () => console.error('LOADED ' + JSON.stringify({ modules: [...loaded], builtins: process.moduleLoadList })));
`;

export interface RecordedServe {
  /** Its process id (the process taskset started, when pinned). */
  pid: number;
  /** The URL its "gateway listening" line gave. */
  url: string;
  /** The module URLs it loaded so far, and Node's own modules (process.moduleLoadList). */
  loaded(): Promise<{ modules: string[]; builtins: string[] }>;
  /** What it wrote to stderr so far. */
  stderr(): string;
  stop(): Promise<void>;
}

/**
 * `node <entry> serve` from the repository's root with the shipped config.yaml, once listening;
 * with `pin`, started by `taskset -c <pin>` (Linux), and with `env` added to the environment.
 */
export async function recordedServe(entry: string, opts: { pin?: string; env?: Record<string, string> } = {}): Promise<RecordedServe> {
  const recorder = join(mkdtempSync(join(tmpdir(), 'gw-recorded-')), 'recorder.mjs');
  writeFileSync(recorder, RECORDER);
  const node = [process.execPath, '--import', recorder, join(ROOT, entry), 'serve'];
  const [command, ...args] = opts.pin === undefined ? node : ['taskset', '-c', opts.pin, ...node];
  const child = spawn(command!, args, {
    cwd: ROOT, env: { ...process.env, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'info', ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  };
  try {
    for (const deadline = Date.now() + 40_000; !out.includes('"gateway listening"'); await new Promise((r) => setTimeout(r, 50))) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`gateway did not start: ${out}${err}`);
    }
  } catch (e) {
    await stop();
    throw e;
  }
  const { url } = JSON.parse(out.split('\n').find((l) => l.includes('"gateway listening"'))!) as { url: string };
  const loaded = async () => {
    const from = err.length;
    child.kill('SIGUSR2');
    // The whole line: a long list may arrive in more than one chunk.
    const line = () => /LOADED (.*)\n/.exec(err.slice(from))?.[1];
    for (const deadline = Date.now() + 5000; !line(); await new Promise((r) => setTimeout(r, 20))) {
      if (Date.now() > deadline) throw new Error(`no module list: ${err}`);
    }
    return JSON.parse(line()!) as { modules: string[]; builtins: string[] };
  };
  return { pid: child.pid!, url, loaded, stderr: () => err, stop };
}

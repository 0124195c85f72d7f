// V8's worker pool, sized to the CPUs this process may run on. Node starts four V8 platform
// workers whatever the machine (--v8-pool-size's default); they run the collector's concurrent
// marking and parallel scavenges and the background compiles. On fewer cores than that, a burst
// of their jobs shares the gateway's core with its main thread, which then gets a fifth of it for
// 40–80 ms at a time in a fresh gateway's first tens of seconds under load (docs/performance.md,
// *V8's worker pool on one pinned core*). The pool is sized when Node boots and never after, so
// `gateway serve` replaces its own process with itself plus the flag (process.execve: the same
// process id, stdio and environment, no second process) before it loads anything;
// `serve --workers`' processes inherit the flag (cluster forks with the primary's execArgv).
// Plain JavaScript, as gateway.mjs, which imports it.
import { accessSync, constants } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Node's own pool size (--v8-pool-size's default), whatever the CPUs. */
export const NODE_POOL = 4;

/** The node flags that size the pool for a process that may run on `cpus` CPUs: none where Node's fits. */
export function poolFlags(cpus = availableParallelism()) {
  return cpus < NODE_POOL ? [`--v8-pool-size=${Math.max(1, cpus)}`] : [];
}

/** Whether the pool was sized already, on node's command line or in NODE_OPTIONS: an operator's choice stands. */
export function poolChosen(execArgv = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? '') {
  return [...execArgv, ...nodeOptions.split(/\s+/)].some((a) => /^--v8[-_]pool[-_]size\b/.test(a));
}

/**
 * Replaces this process with itself plus poolFlags(), when they differ from Node's default and no
 * size was chosen. Not in a forked child (its IPC channel does not survive an exec, and its parent
 * chose its flags: a `serve --workers` worker has the primary's, bench/chat.ts passes poolFlags(1)
 * to the gateway it pins), nor where there is no execve (Windows, Node before 22.15): there the
 * process goes on with Node's pool.
 */
export function sizeV8Pool() {
  const flags = poolFlags();
  // Windows has process.execve, which throws there; called, it would still print its warning.
  if (!flags.length || poolChosen() || process.send || typeof process.execve !== 'function' || process.platform === 'win32') return;
  try {
    // A failed execve(2) aborts Node (SIGABRT, not an exception), so the binary is checked first:
    // one removed or replaced by an upgrade since this process started serves with Node's pool.
    accessSync(process.execPath, constants.X_OK);
    process.execve(process.execPath, [process.execPath, ...flags, ...process.execArgv, ...process.argv.slice(1)]);
  } catch {
    // Refused before the system call (--permission without --allow-child-process): Node's pool,
    // and Node's one-line ExperimentalWarning for execve (after an exec it is never printed).
  }
}

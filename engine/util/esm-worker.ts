import { workerData } from 'node:worker_threads';

const ENTRY = new URL('./esm-worker.cjs', import.meta.url).href;
// Compiled into dist/ (engine/cli/build.mjs), a pool's task module is the .js file beside its .ts name.
const COMPILED = import.meta.url.endsWith('.js');

/**
 * Piscina options that run `module`'s default export as the task function, loaded with import()
 * through a CommonJS entry (esm-worker.cjs says why). Worker flags stay node's default: the
 * parent's execArgv is inherited, V8 flags such as --max-old-space-size included, which an
 * explicit execArgv list would refuse (ERR_WORKER_INVALID_EXEC_ARGV).
 */
export function esmWorker(module: URL, data?: unknown): { filename: string; workerData: { module: string; data: unknown } } {
  return { filename: ENTRY, workerData: { module: COMPILED ? module.href.replace(/\.ts$/, '.js') : module.href, data } };
}

/** Inside a worker started with esmWorker(): the `data` its pool passed. */
export function esmWorkerData<T>(): T {
  return (workerData as { data: T }).data;
}

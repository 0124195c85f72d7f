// Where large request bodies of media routes are parsed and their media checked: a Piscina pool
// of worker threads (the default), or the main thread (`inline`, for comparison and for hosts
// without spare cores). Small bodies are always parsed on the main thread: a worker round trip
// costs more than parsing them.
//
// Configure with configureMedia() or the environment: GATEWAY_MEDIA_DECODE=pool|inline,
// GATEWAY_MEDIA_THREADS=<n>.
import { availableParallelism } from 'node:os';
import type { Piscina } from 'piscina';
import { esmWorker } from '../util/esm-worker.ts';
import { JsonBodyError, parseJsonBytes } from '../util/json-body.ts';
import type { MediaRule } from './checks.ts';
import { mediaBlobs } from './blobs.ts';
import { recycleBodyBuffer } from './buffers.ts';
import type { ParseOutcome, ParseTask } from './worker.ts';

export interface MediaOptions {
  mode: 'pool' | 'inline';
  /** Worker threads (default: available cores, at least 2). */
  threads: number;
  /** Bodies smaller than this are parsed on the main thread. */
  inlineBelowBytes: number;
  /** Media strings at least this long are held as blobs (pool mode). */
  blobMinChars: number;
}

const env = process.env;
let options: MediaOptions = {
  mode: env.GATEWAY_MEDIA_DECODE === 'inline' ? 'inline' : 'pool',
  threads: Math.max(2, Number(env.GATEWAY_MEDIA_THREADS) || availableParallelism()),
  inlineBelowBytes: 256 * 1024,
  blobMinChars: 64 * 1024,
};
let pool: Piscina | undefined;

export function configureMedia(o: Partial<MediaOptions>): MediaOptions {
  const threadsChanged = o.threads !== undefined && o.threads !== options.threads;
  options = { ...options, ...o };
  if (threadsChanged && pool) {
    const old = pool;
    pool = undefined;
    void old.destroy();
  }
  return options;
}

export function mediaOptions(): Readonly<MediaOptions> {
  return options;
}

/** Piscina is imported with the first body the pool parses: a gateway that never gets one does not hold it. */
async function thePool(): Promise<Piscina> {
  const { Piscina } = await import('piscina');
  pool ??= new Piscina({
    ...esmWorker(new URL('./worker.ts', import.meta.url)),
    minThreads: 1,
    maxThreads: options.threads,
    idleTimeout: 30_000,
    // One big body at a time per thread; queued bodies wait their turn instead of piling up.
    concurrentTasksPerWorker: 1,
  });
  return pool;
}

export interface ParsedBody {
  body: unknown;
  /** Blob tokens this request holds (release them when no task takes them over). */
  tokens: string[];
}

/**
 * Parse a JSON body; large ones (pool mode) in a worker, with their large media held as blobs.
 * A body that does not parse, or nests too deeply, is a JsonBodyError (util/json-body.ts).
 */
export async function parseMediaBody(bytes: Uint8Array, length: number, rules: readonly MediaRule[]): Promise<ParsedBody> {
  if (options.mode === 'inline' || length < options.inlineBelowBytes || rules.length === 0) {
    try {
      return { body: parseJsonBytes(bytes, length), tokens: [] };
    } finally {
      if (bytes.byteOffset === 0) recycleBodyBuffer(bytes.buffer as ArrayBuffer);
    }
  }
  // Transfer, not copy: the caller gives up `bytes`.
  const buffer = bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.byteLength ? (bytes.buffer as ArrayBuffer) : bytes.slice(0, length).buffer;
  const task: ParseTask = { bytes: buffer, length, rules: [...rules], blobMinChars: options.blobMinChars };
  const outcome = (await (await thePool()).run(task, { transferList: [buffer] })) as ParseOutcome;
  // The worker hands the body's buffer back (transferred): it serves the next large body.
  if (outcome.spare) recycleBodyBuffer(outcome.spare);
  if (!outcome.ok) throw new JsonBodyError(outcome.detail, outcome.tooDeep);
  const now = Date.now();
  for (const b of outcome.blobs) mediaBlobs.put(b.token, b.bytes, b.verdict, now);
  return { body: outcome.body, tokens: outcome.blobs.map((b) => b.token) };
}

/** Stop the pool's threads (tests, shutdown). */
export async function closeMediaPool(): Promise<void> {
  const p = pool;
  pool = undefined;
  await p?.destroy();
}

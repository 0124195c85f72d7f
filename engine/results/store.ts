// The result-file port: where copied result files live (engine/store/files: a local directory;
// engine/store/s3: S3-compatible object storage). Keys are `<tenant>/<task id>/<file name>`;
// the service (./service.ts) decides them, the adapters only store bytes under them.
import type { Readable } from 'node:stream';

/**
 * Keys under this prefix are the ledger archive's segments (engine/billing/ledger-archive.ts),
 * not result files: money, never expired by the retention sweep. Result keys start with a tenant
 * id (a UUID when the gateway makes it).
 */
export const LEDGER_ARCHIVE_PREFIX = 'ledger/';

export interface StoredFile {
  size: number;
  contentType: string;
  /** A strong validator (quoted), the same for every process that serves the file. */
  etag: string;
  /** Epoch ms the file was written: the retention sweep deletes by it. */
  writtenAt: number;
}

export interface ListedFile {
  key: string;
  size: number;
  writtenAt: number;
}

export interface ResultBackend {
  readonly kind: 'local' | 's3';
  /**
   * Store `body` under `key`, streamed (never held whole). Atomic: a reader sees the whole file
   * or none, so a copy cut short (a killed process, a failed download) leaves nothing a client
   * could be served. Writing the same key again replaces it (a re-driven copy).
   */
  put(key: string, body: Readable, contentType: string): Promise<StoredFile>;
  /**
   * Store `body` under `key` only when nothing is there yet: never replaces (the ledger archive's
   * segments are immutable, and a stalled writer landing late must not overwrite the copy another
   * wrote meanwhile). Answers the file, or undefined when the key was already taken (the caller
   * reads what is there). Atomic like put, and durable once it answers.
   */
  create(key: string, body: Buffer, contentType: string): Promise<StoredFile | undefined>;
  stat(key: string): Promise<StoredFile | undefined>;
  /** The bytes of `key`, or of the inclusive range [start, end]. */
  read(key: string, range?: { start: number; end: number }): Promise<Readable>;
  /** A short-lived URL the client may be redirected to instead of streaming (S3), else undefined. */
  presign(key: string, opts: { expiresInS: number; contentDisposition: string }): Promise<string | undefined>;
  /** Delete `key` (nothing when it is already gone). */
  remove(key: string): Promise<void>;
  /** Every file under `prefix` ('' for all), with files half-written by a cut copy left out. */
  list(prefix: string): AsyncIterable<ListedFile>;
  close(): Promise<void>;
}

// The result store's service room: copy a completed task's files (./copy.ts), open a file for
// the result host (GET/HEAD /results/{task_id}/{token}/{name}, engine/http/result-files.ts),
// the retention sweep, and each tenant's storage use. docs/results.md describes what a client
// and an operator see.
import type { Logger } from 'pino';
import type { ResultsConfig } from '../config/types.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { recurring, type JobScheduler } from '../jobs/scheduler.ts';
import { resultBytesHeld, resultFilesDeleted, resultFilesHeld } from '../metrics/metrics.ts';
import type { TaskStore } from '../tasks/store.ts';
import type { TaskRecord } from '../tasks/task.ts';
import type { Clock } from '../util/clock.ts';
import { sameSecret } from '../util/secrets.ts';
import { fileKey, ResultCopier } from './copy.ts';
import type { CopyOutcome, DownloadAuth, ResultCopyPort } from '../tasks/result-copy.ts';
import { Downloader } from './download.ts';
import { LEDGER_ARCHIVE_PREFIX, type ResultBackend, type StoredFile } from './store.ts';

export const RESULTS_SWEEP_JOB = 'results.sweep';
/** Longest a client may cache a file (a day), whatever its remaining life. */
const MAX_CACHE_S = 86_400;

export interface ResultServiceDeps {
  backend: ResultBackend;
  tasks: TaskStore;
  config: ResultsConfig;
  clock: Clock;
  logger: Logger;
  scheduler: JobScheduler;
  /** The result host (no trailing slash). */
  baseUrl: () => string;
  /** Origins downloaded from without the address check: the built-in sandbox. */
  trustedOrigins: readonly string[];
  /** timing.scale, applied to the sweep interval. */
  timeScale: number;
}

/** A file the result host may send. */
export interface OpenedFile {
  key: string;
  file: StoredFile;
  name: string;
  /** Seconds a client may cache it (never past its expiry). */
  maxAgeS: number;
  /** A presigned URL to redirect to instead of streaming (S3 with results.s3.presign). */
  redirect?: string;
}

export class ResultService implements ResultCopyPort {
  readonly backend: ResultBackend;
  private readonly d: ResultServiceDeps;
  private readonly copier: ResultCopier;
  private readonly downloader: Downloader;
  private readonly retentionMs: number;
  private readonly sweepIntervalMs: number;

  constructor(deps: ResultServiceDeps) {
    this.d = deps;
    this.backend = deps.backend;
    const c = deps.config;
    this.retentionMs = Math.round(c.retention_hours * 3_600_000);
    this.sweepIntervalMs = Math.max(1, Math.round(c.sweep_interval_ms * deps.timeScale));
    this.downloader = new Downloader({ allowPrivateCidrs: c.allow_private_cidrs, trustedOrigins: deps.trustedOrigins, connectTimeoutMs: c.connect_timeout_ms, idleTimeoutMs: c.idle_timeout_ms, maxBytes: c.max_file_bytes });
    const contentTypes = Object.fromEntries(Object.entries(c.content_types).map(([kind, list]) => [kind, new Set(list.map((t) => t.toLowerCase()))]));
    this.copier = new ResultCopier({ backend: deps.backend, downloader: this.downloader, clock: deps.clock, logger: deps.logger, baseUrl: deps.baseUrl, retentionMs: this.retentionMs, copyTimeoutMs: c.copy_timeout_ms, contentTypes });
  }

  copy(task: TaskRecord, result: Record<string, unknown>, auth?: DownloadAuth): Promise<CopyOutcome> {
    return this.copier.copy(task, result, auth);
  }

  /**
   * The file `name` of task `taskId` behind URL secret `token`. An unknown task, a wrong
   * secret or a name the task does not have: 404 (nothing said about which). A task whose
   * files have expired or been deleted: 410.
   */
  async open(taskId: string, token: string, name: string): Promise<OpenedFile> {
    const task = await this.d.tasks.get(taskId);
    const notFound = () => new GatewayError('resourceNotFound', 'No such result file.');
    if (!task?.results_token || !sameSecret(task.results_token, token) || !hasFile(task, `/${token}/${name}`)) throw notFound();
    const expires = Date.parse(task.results_expire_at ?? '');
    const left = expires - this.d.clock.now();
    if (!(left > 0)) throw gone(`The result files of this task expired at ${task.results_expire_at}.`);
    const key = fileKey(task, name);
    const file = await this.backend.stat(key);
    if (!file) throw gone('This result file has been deleted.');
    const maxAgeS = Math.max(0, Math.min(MAX_CACHE_S, Math.floor(left / 1000)));
    const opened: OpenedFile = { key, file, name, maxAgeS };
    if (this.d.config.store === 's3' && this.d.config.s3.presign) {
      opened.redirect = await this.backend.presign(key, { expiresInS: Math.max(1, Math.min(maxAgeS, 3600)), contentDisposition: contentDisposition(name) });
    }
    return opened;
  }

  /** Files held by one tenant (the usage API and the console). */
  async storageUse(tenantId: string): Promise<{ files: number; bytes: number }> {
    let files = 0;
    let bytes = 0;
    for await (const f of this.backend.list(`${tenantId}/`)) {
      files++;
      bytes += f.size;
    }
    return { files, bytes };
  }

  /**
   * The retention sweep: deletes every file written more than retention_hours ago. Several
   * processes may sweep at once (each delete is idempotent); it also counts what is held.
   */
  async sweep(): Promise<number> {
    const before = this.d.clock.now() - this.retentionMs;
    let deleted = 0;
    let files = 0;
    let bytes = 0;
    for await (const f of this.backend.list('')) {
      if (f.key.startsWith(LEDGER_ARCHIVE_PREFIX)) continue; // ledger segments are money: never expired
      if (f.writtenAt <= before) {
        await this.backend.remove(f.key);
        deleted++;
      } else {
        files++;
        bytes += f.size;
      }
    }
    resultFilesDeleted.inc(deleted);
    resultFilesHeld.set(files);
    resultBytesHeld.set(bytes);
    if (deleted) this.d.logger.info({ deleted, held: files }, 'expired result files deleted');
    return deleted;
  }

  /** Worker role: the sweep chain, one job per slot, shared by every worker (like the task sweep). */
  startWorkers(): Promise<void> {
    return recurring(this.d.scheduler, RESULTS_SWEEP_JOB, this.sweepIntervalMs, () => this.d.clock.now(), () => this.sweep());
  }

  async close(): Promise<void> {
    await this.downloader.close();
    await this.backend.close();
  }
}

/** Whether one of the task's result URLs ends with `tail` (its secret and the file's name). */
function hasFile(task: TaskRecord, tail: string): boolean {
  return Object.values(task.result ?? {}).some((v) => Array.isArray(v) && v.some((u) => typeof u === 'string' && u.endsWith(tail)));
}

function gone(detail: string): GatewayError {
  return new GatewayError('gone', detail);
}

/** Shown in place (a <video> plays it), saved under its own name. */
export function contentDisposition(name: string): string {
  return `inline; filename="${name}"`;
}

// Copying a completed task's result files (images, videos, audios) into the result store, and
// the URLs that replace the provider's. Idempotent: a file's key follows from the task (tenant,
// task id, field, index, type), and the URL secret was chosen at create, so a copy re-driven by
// another process (or after a restart) writes the same keys and yields the same URLs.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { URL_LIST_FIELDS } from '../descriptors/result-fields.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { resultBytesCopied, resultCopyDuration, resultCopyFailures } from '../metrics/metrics.ts';
import type { TaskRecord } from '../tasks/task.ts';
import { isoAt, type Clock } from '../util/clock.ts';
import type { CopyOutcome, DownloadAuth } from '../tasks/result-copy.ts';
import { CopyFailure, type Downloader } from './download.ts';
import type { ResultBackend } from './store.ts';

export interface CopierDeps {
  backend: ResultBackend;
  downloader: Downloader;
  clock: Clock;
  logger: Logger;
  /** The result host (no trailing slash), read at copy time (the listening address is known only after start). */
  baseUrl: () => string;
  retentionMs: number;
  copyTimeoutMs: number;
  contentTypes: Readonly<Record<string, ReadonlySet<string>>>;
}

/** The file extension a stored file gets from its media type (the URL's last segment ends with it). */
const EXTENSIONS: Readonly<Record<string, string>> = {
  'image/jpeg': 'jpg', 'image/svg+xml': 'svg', 'video/quicktime': 'mov', 'video/x-matroska': 'mkv', 'audio/mpeg': 'mp3',
  'audio/x-wav': 'wav', 'audio/wave': 'wav', 'audio/mp4': 'm4a',
};

export function fileKey(task: Pick<TaskRecord, 'tenant_id' | 'id'>, name: string): string {
  return `${task.tenant_id}/${task.id}/${name}`;
}

export class ResultCopier {
  private readonly d: CopierDeps;

  constructor(deps: CopierDeps) {
    this.d = deps;
  }

  /** Copy every file of `result`; `auth` opens the files of hosts that need the vendor's key. */
  async copy(task: TaskRecord, result: Record<string, unknown>, auth?: DownloadAuth): Promise<CopyOutcome> {
    const started = this.d.clock.now();
    const t0 = performance.now();
    const token = task.results_token ?? randomBytes(24).toString('base64url');
    // Within the task's deadline: the copy is part of the task's run.
    const signal = AbortSignal.timeout(Math.max(1, Math.min(this.d.copyTimeoutMs, task.deadline_at - started)));
    const copied: Record<string, unknown> = { ...result };
    try {
      for (const [field, value] of Object.entries(result)) {
        if (!URL_LIST_FIELDS.has(field) || !Array.isArray(value)) continue;
        const urls: string[] = [];
        for (const [i, url] of (value as string[]).entries()) urls.push(await this.copyFile(task, token, field, i, url, signal, auth));
        copied[field] = urls;
      }
    } catch (err) {
      const failure = err instanceof CopyFailure ? err : new CopyFailure('store', false, `the result store failed: ${(err as Error).message}`, err);
      resultCopyFailures.inc({ vendor: task.vendor, reason: failure.reason });
      this.d.logger[failure.permanent ? 'error' : 'warn']({ task_id: task.id, reason: failure.reason, err: failure.cause ?? undefined, provider_result: result }, `result copy failed: ${failure.message}`);
      return { ok: false, permanent: failure.permanent, error: new GatewayError('resultCopyFailed', `The result files could not be copied: ${failure.message}.`) };
    }
    resultCopyDuration.observe({ vendor: task.vendor }, (performance.now() - t0) / 1000);
    // The expiry counts from the copy's start: the sweep deletes by the time each file was
    // written, which is later, so a URL stops opening (410) before its file is gone, never after.
    return { ok: true, patch: { result: copied, results_token: token, results_expire_at: isoAt(started + this.d.retentionMs) } };
  }

  private async copyFile(task: TaskRecord, token: string, field: string, i: number, url: string, signal: AbortSignal, auth?: DownloadAuth): Promise<string> {
    const accept = this.d.contentTypes[field] ?? new Set<string>();
    const download = await this.d.downloader.fetch({ url, accept, auth, signal });
    const name = `${field}-${i}.${extensionOf(download.contentType)}`;
    try {
      const stored = await this.d.backend.put(fileKey(task, name), download.body, download.contentType);
      resultBytesCopied.inc({ vendor: task.vendor }, stored.size);
    } catch (err) {
      download.body.destroy();
      // The download's own failure travels through the store's pipeline: keep its reason.
      const cause = findFailure(err);
      if (cause) throw cause;
      if (signal.aborted) throw new CopyFailure('timeout', false, 'the copy did not finish in time', err);
      throw new CopyFailure('store', false, `the result store refused the file: ${(err as Error).message}`, err);
    }
    return `${this.d.baseUrl()}/results/${task.id}/${token}/${name}`;
  }
}

function extensionOf(mediaType: string): string {
  return EXTENSIONS[mediaType] ?? ((mediaType.split('/')[1] ?? '').replace(/^x-/, '').replace(/[^a-z0-9]/g, '').slice(0, 8) || 'bin');
}

function findFailure(err: unknown): CopyFailure | undefined {
  let e = err as { cause?: unknown } | undefined;
  for (let i = 0; i < 5 && e; i++) {
    if (e instanceof CopyFailure) return e;
    e = e.cause as typeof e;
  }
  return undefined;
}

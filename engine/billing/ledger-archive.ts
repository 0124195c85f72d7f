// The ledger archive: ledger lines older than the retention leave the wallet store (Redis or
// memory) for immutable NDJSON segments on the result store's backend, and every reader of the
// ledger (GET /v1/ledger, the admin ledger, the console, the CSV export) reads across both.
//
// Segments are `ledger/<tenant>/<YYYY-MM-DD>/<first seq, 16 digits>`, one JSON LedgerEntry a line,
// lines of one UTC day in seq order. A line's seq never changes, so a page cursor means the same
// line before and after it moved. The mover, per tenant:
//   1. claimArchive: the oldest lines due (one day, at most SEGMENT_LINES) and the tenant's
//      archive lease, so two processes never write the same lines;
//   2. create the segment (atomic, and never replacing a segment already there), read it back
//      and compare its hash;
//   3. trimArchived: one script drops exactly the segment's lines (checked by first/last seq and
//      id, and that the lease is still ours) and moves the archived mark.
// When the key is taken (a run killed between 2 and 3, or a stalled mover whose lease ran out
// landing after, or before, the one that took over), the segment there wins: its lines must be
// ours wherever both have a line (else nothing is trimmed), and the trim drops the segment's lines,
// no more: a shorter segment leaves the rest of ours for the next claim and the next key; a longer
// one was another's claim. Nothing is lost, and no line is in two segments. Readers also take
// each seq once.
import type { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import type { Logger } from 'pino';
import { recurring, type JobScheduler } from '../jobs/scheduler.ts';
import { throttled } from '../log/throttle.ts';
import { ledgerArchiveFailures, ledgerLinesArchived } from '../metrics/metrics.ts';
import { LEDGER_ARCHIVE_PREFIX, type ResultBackend } from '../results/store.ts';
import type { Clock } from '../util/clock.ts';
import { prefixedId } from '../util/ids.ts';
import type { ArchiveSegment, LedgerEntry, LedgerPage, WalletStore } from './store.ts';

const LEDGER_PREFIX = LEDGER_ARCHIVE_PREFIX;
export const LEDGER_ARCHIVE_JOB = 'ledger.archive';
/** Lines in one segment at most (about 250 B each). */
export const SEGMENT_LINES = 5_000;
/** Parsed segments kept in memory for readers paging back (a CSV export walks many pages). */
const CACHED_SEGMENTS = 8;

export interface LedgerArchiveDeps {
  store: WalletStore;
  backend: ResultBackend;
  clock: Clock;
  logger: Logger;
  /** Lines older than this leave the store; 0: none for their age (the memory store's count bound still applies). */
  retentionMs: number;
  /** How long a claim is ours (default 60 s: far longer than a segment's write and read-back). */
  leaseMs?: number;
  /** Lines per segment at most (default SEGMENT_LINES). */
  segmentLines?: number;
  /** Worker role: the archive job's chain (every intervalMs over every tenant). */
  scheduler?: JobScheduler;
  intervalMs?: number;
  tenantIds?: () => Promise<string[]>;
}

export class LedgerArchive {
  private readonly d: LedgerArchiveDeps;
  /** This process's archiver: the lease owner. */
  readonly owner = prefixedId('arc_');
  /** Per tenant: the first seqs of its segments, ascending, as listed when `through` was archived. */
  private readonly index = new Map<string, { through: number; firsts: number[]; keys: string[] }>();
  private readonly segments = new Map<string, LedgerEntry[]>();
  /** Per tenant, this process's last move queued: moves of one tenant run one after another. */
  private readonly moving = new Map<string, Promise<unknown>>();
  /** Tenants whose wallet store asked for a move (onLinesPastBound) not yet made. */
  private readonly woken = new Set<string>();

  constructor(deps: LedgerArchiveDeps) {
    this.d = deps;
  }

  /** Moves the due lines of every tenant; one tenant's failure does not hold back the others. */
  async archiveAll(): Promise<number> {
    let moved = 0;
    for (const tenantId of (await this.d.tenantIds?.()) ?? []) {
      try {
        moved += await this.archiveTenant(tenantId);
      } catch (err) {
        ledgerArchiveFailures.inc();
        // Throttled: in a store fault every tenant of the run fails the same way (a line each
        // would bury the one that matters; the metric counts them all).
        throttled(this.d.logger).error({ err, tenant_id: tenantId }, 'ledger lines could not be archived (they stay in the store; retried next run)');
      }
    }
    return moved;
  }

  /**
   * Worker role: the archive chain, one job per slot shared by every worker (like the results
   * sweep); and, with a store that holds its lines in this process, a segment's move as soon as a
   * wallet holds a segment's worth past its bound.
   */
  startWorkers(): Promise<void> {
    this.followStore();
    return recurring(this.d.scheduler!, LEDGER_ARCHIVE_JOB, this.d.intervalMs ?? 60_000, () => this.d.clock.now(), () => this.archiveAll());
  }

  /** Moves every line of the tenant that is due; answers how many moved. */
  archiveTenant(tenantId: string): Promise<number> {
    return this.inTurn(tenantId, async () => {
      let moved = 0;
      for (let n; (n = await this.moveSegment(tenantId)) > 0;) moved += n;
      return moved;
    });
  }

  /** Moves a segment of a wallet's lines as soon as its store says they are past its bound (a memory store's). */
  followStore(): void {
    this.d.store.onLinesPastBound?.(this.d.segmentLines ?? SEGMENT_LINES, (tenantId) => this.wake(tenantId));
  }

  /** One segment of the tenant's due lines, queued behind any move of it in flight (a store's call: not awaited). */
  private wake(tenantId: string): void {
    if (this.woken.has(tenantId)) return;
    this.woken.add(tenantId);
    void this.inTurn(tenantId, () => {
      this.woken.delete(tenantId);
      return this.moveSegment(tenantId);
    }).catch((err: unknown) => {
      ledgerArchiveFailures.inc();
      throttled(this.d.logger).error({ err, tenant_id: tenantId }, 'ledger lines could not be archived (they stay in the store; retried next run)');
    });
  }

  /** Runs `move` after the tenant's moves queued before it (two moves of one owner would claim the same lines). */
  private inTurn<T>(tenantId: string, move: () => Promise<T>): Promise<T> {
    const run = (this.moving.get(tenantId) ?? Promise.resolve()).then(move, move);
    const settled = run.catch(() => undefined);
    this.moving.set(tenantId, settled);
    void settled.then(() => this.moving.get(tenantId) === settled && this.moving.delete(tenantId));
    return run;
  }

  /** Claims, writes and trims one segment of the tenant's due lines; answers how many moved (0: none due, or taken by another). */
  private async moveSegment(tenantId: string): Promise<number> {
    const now = this.d.clock.now();
    const before = this.d.retentionMs > 0 ? new Date(now - this.d.retentionMs).toISOString() : ''; // '': no line is old enough
    const batch = await this.d.store.claimArchive(tenantId, { owner: this.owner, now, leaseMs: this.d.leaseMs ?? 60_000, before, max: this.d.segmentLines ?? SEGMENT_LINES });
    if (batch.status !== 'ok') return 0;
    // A store that keeps its lines as a segment's bytes (memory) hands those; others the lines.
    const seg = batch.segment ?? segmentOf(batch.entries);
    const first = seg.first;
    const held = await this.write(segmentKey(tenantId, first), seg);
    const last = held.last;
    if (!(await this.d.store.trimArchived(tenantId, { owner: this.owner, first, last }))) {
      this.d.logger.warn({ tenantId, first: first.seq, last: last.seq }, 'ledger lines archived but not trimmed: another archiver moved first');
      return 0;
    }
    ledgerLinesArchived.inc(held.count);
    return held.count;
  }

  /**
   * The ledger newest first, `limit` lines with seq < beforeSeq: the store's page, continued from
   * the segments below the archived mark. The same lines, seqs and cursors as before archiving.
   */
  async list(tenantId: string, limit: number, beforeSeq?: number): Promise<LedgerPage> {
    const page = await this.d.store.list(tenantId, limit, beforeSeq);
    const through = page.archivedThrough ?? 0;
    if (page.entries.length >= limit || through === 0) return page;
    // Seqs 1..through are in segments (written before the store let them go).
    const upper = Math.min(beforeSeq ?? Infinity, through + 1);
    const older = await this.readBelow(tenantId, upper, limit - page.entries.length, through);
    const entries = [...page.entries, ...older];
    const oldest = entries.at(-1)?.seq ?? upper;
    return { entries, nextBeforeSeq: oldest > 1 && entries.length ? oldest : null, archivedThrough: through };
  }

  /** Up to `limit` archived lines with seq < upper, newest first. */
  private async readBelow(tenantId: string, upper: number, limit: number, through: number): Promise<LedgerEntry[]> {
    const idx = await this.segmentIndex(tenantId, through);
    const out: LedgerEntry[] = [];
    let want = upper - 1;
    for (let i = idx.firsts.length - 1; i >= 0 && out.length < limit && want >= 1; i--) {
      if (idx.firsts[i]! > want) continue;
      const lines = await this.segment(idx.keys[i]!);
      // Each seq once: a segment's lines below the next segment's first and at most `want`.
      for (let j = lines.length - 1; j >= 0 && out.length < limit; j--) {
        const e = lines[j]!;
        if (e.seq === want) {
          out.push(e);
          want--;
        }
      }
    }
    if (out.length < limit && want >= 1) throw new Error(`ledger archive of ${tenantId} is missing line ${want}`);
    return out;
  }

  private async segmentIndex(tenantId: string, through: number): Promise<{ through: number; firsts: number[]; keys: string[] }> {
    const cached = this.index.get(tenantId);
    if (cached && cached.through >= through) return cached;
    const found: { first: number; key: string }[] = [];
    for await (const f of this.d.backend.list(`${LEDGER_PREFIX}${tenantId}/`)) {
      const m = /\/(\d{16})$/.exec(f.key);
      if (m) found.push({ first: Number(m[1]), key: f.key });
    }
    found.sort((a, b) => a.first - b.first);
    const idx = { through, firsts: found.map((f) => f.first), keys: found.map((f) => f.key) };
    this.index.set(tenantId, idx);
    return idx;
  }

  private async segment(key: string): Promise<LedgerEntry[]> {
    const hit = this.segments.get(key);
    if (hit) return hit;
    const lines = parseSegment(await text(await this.d.backend.read(key)));
    if (this.segments.size >= CACHED_SEGMENTS) this.segments.delete(this.segments.keys().next().value!);
    this.segments.set(key, lines);
    return lines;
  }

  /**
   * Creates the segment and reads it back, answering the lines it holds: the store trims only
   * what is durably there. A segment already under the key is never replaced (a writer that
   * stalled past its lease must not overwrite the copy written meanwhile): it is answered when its
   * lines are ours wherever both have one, else this throws and nothing is trimmed.
   */
  private async write(key: string, seg: ArchiveSegment): Promise<Pick<ArchiveSegment, 'count' | 'last'>> {
    const body = seg.body;
    const stored = await this.d.backend.create(key, body, 'application/x-ndjson');
    this.segments.delete(key);
    this.index.delete(key.split('/')[1]!);
    if (stored) {
      // Compared as bytes, a chunk at a time against what was written: no decoding, no second
      // copy of the segment (a segment a second on the memory store at chat rates).
      if (!(await readsBack(await this.d.backend.read(key), body))) throw new Error(`ledger segment ${key} reads back different from what was written`);
      return seg;
    }
    const entries = parseSegment(body.toString());
    const there = parseSegment(await text(await this.d.backend.read(key)));
    const differs = there.findIndex((e, i) => i < entries.length && lineOf(e) !== lineOf(entries[i]!));
    if (!there.length || differs >= 0) throw new Error(`ledger segment ${key} is already there and holds other lines than ours (from seq ${there[differs]?.seq ?? entries[0]!.seq})`);
    this.d.logger.info({ key, ours: entries.length, there: there.length }, 'ledger segment already written (by a run cut short or another archiver): its lines are trimmed, not replaced');
    return { count: there.length, last: there.at(-1)! };
  }
}

/** Lines handed as entries (a store that keeps them as records: Redis), as a segment. */
function segmentOf(entries: LedgerEntry[]): ArchiveSegment {
  return { body: ndjson(entries), count: entries.length, first: entries[0]!, last: entries.at(-1)! };
}

/**
 * The segment's bytes: each line encoded straight into one buffer as it is stringified. A chat's
 * three lines pass here on the memory store, which archives as it goes: joined into one string
 * first, a segment was also 5,000 concatenations and a 1.2 MB string to flatten (~0.9 KB of heap
 * per sync chat).
 */
function ndjson(entries: LedgerEntry[]): Buffer {
  let buf = Buffer.allocUnsafe(entries.length * 256);
  let n = 0;
  for (const e of entries) {
    const line = JSON.stringify(e);
    const most = n + line.length * 3 + 1; // UTF-8: 3 bytes a UTF-16 unit at most, and the '\n'
    if (most > buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(buf.length * 2, most));
      buf.copy(grown, 0, 0, n);
      buf = grown;
    }
    n += buf.write(line, n);
    buf[n++] = 0x0a;
  }
  return buf.subarray(0, n);
}

/** Whether `stream` holds exactly `body`'s bytes (chunks may be strings: UTF-8). Stops at the first difference. */
async function readsBack(stream: Readable, body: Buffer): Promise<boolean> {
  let at = 0;
  for await (const chunk of stream as AsyncIterable<Buffer | string>) {
    const got = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (at + got.length > body.length || body.compare(got, 0, got.length, at, at + got.length) !== 0) return false;
    at += got.length;
  }
  return at === body.length;
}

/** `ledger/<tenant>/<day>/<first seq>`: keys of one tenant sort by day, then seq. */
export function segmentKey(tenantId: string, first: Pick<LedgerEntry, 'at' | 'seq'>): string {
  return `${LEDGER_PREFIX}${tenantId}/${first.at.slice(0, 10)}/${String(first.seq).padStart(16, '0')}`;
}

export function parseSegment(body: string): LedgerEntry[] {
  return body.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as LedgerEntry);
}

/** A line's every field in a fixed order: two segments' copies of a line compare equal whatever their key order. */
function lineOf(e: LedgerEntry): string {
  return JSON.stringify([e.seq, e.id, e.at, e.kind, e.amount, e.ref, e.note]);
}

// The ledger archive (engine/billing/ledger-archive.ts) over every wallet adapter (memory, Redis,
// one-node Redis Cluster) and both result backends (a local directory; S3 on s3rver): lines
// leave the store only after their segment is written and read back, a mover cut between the
// write and the trim loses and duplicates nothing, two archivers never write a line twice, a
// stalled archiver landing after its lease ran out (after or before the one that took over)
// replaces no segment and loses nothing, and
// the ledger API and the CSV rows are the same lines (ids, seqs, order, cursors) before and after.
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import pino from 'pino';
import { checkLedger } from '../../engine/billing/invariant.ts';
import { LedgerArchive, parseSegment } from '../../engine/billing/ledger-archive.ts';
import { LedgerReports } from '../../engine/billing/reports.ts';
import { BillingService } from '../../engine/billing/service.ts';
import type { LedgerEntry, WalletStore } from '../../engine/billing/store.ts';
import type { ResultBackend } from '../../engine/results/store.ts';
import { LocalResultFiles } from '../../engine/store/files/result-files.ts';
import { MemoryWalletStore } from '../../engine/store/memory/wallets.ts';
import { RedisWalletStore } from '../../engine/store/redis/wallets.ts';
import { S3ResultObjects } from '../../engine/store/s3/result-objects.ts';
import { ManualClock } from '../../engine/util/clock.ts';
import { TestS3 } from '../results/support.ts';
import { forEachBackend } from './support.ts';

const T = 'a1b2c3d4-0000-4000-8000-00000000beef';
const HOUR = 3_600_000;
const logger = pino({ level: 'silent' });

/** Every line of the tenant's segments, in key order. */
async function archived(backend: ResultBackend, tenantId = T): Promise<LedgerEntry[]> {
  const keys: string[] = [];
  for await (const f of backend.list(`ledger/${tenantId}/`)) keys.push(f.key);
  keys.sort();
  const out: LedgerEntry[] = [];
  for (const k of keys) out.push(...parseSegment(await new Response((await backend.read(k)) as unknown as ReadableStream).text()));
  return out;
}

/** Writes n chat-like charges and a few task holds over two UTC days, 10 minutes apart. */
async function trade(store: WalletStore, clock: ManualClock, n: number): Promise<void> {
  await store.credit(T, 'topup', 'pay-1', 10_000_000, 'first', new Date(clock.now()).toISOString());
  for (let i = 0; i < n; i++) {
    clock.advance(10 * 60_000);
    const at = new Date(clock.now()).toISOString();
    if (i % 5 === 0) {
      await store.hold(T, `task-${i}`, 700, 'task', at);
      await store.settle(T, `task-${i}`, 300, 'done', at);
    } else await store.charge(T, `openai/chat:${i}`, 120 + i, 'gpt-4o 10 in 20 out', at);
  }
}

/** The tenant's first line (a top-up). */
async function store0(store: WalletStore, clock: ManualClock): Promise<void> {
  await store.credit(T, 'topup', 'pay-1', 10_000_000, 'first', new Date(clock.now()).toISOString());
}

/** Resolves once `done()` holds (checked every 10 ms, 5 s at most). */
async function waitFor(done: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('waited 5 s');
}

/** The backend whose segment writes wait at the door until let through: a mover stalled mid-write. */
function stalled(backend: ResultBackend): { backend: ResultBackend; atWrite: Promise<void>; go: () => void } {
  let reached!: () => void;
  let go!: () => void;
  const atWrite = new Promise<void>((r) => (reached = r));
  const door = new Promise<void>((r) => (go = r));
  const create = async (...a: Parameters<ResultBackend['create']>) => {
    reached();
    await door;
    return backend.create(...a);
  };
  return { backend: Object.assign(Object.create(backend) as ResultBackend, { create }), atWrite, go };
}

/** Every segment's key and bytes. */
async function segmentFiles(backend: ResultBackend): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for await (const f of backend.list('ledger/')) out[f.key] = await new Response((await backend.read(f.key)) as unknown as ReadableStream).text();
  return out;
}

/** Every page of the ledger API (limit 7), and every CSV row, newest first. */
async function readAll(billing: BillingService, reports: LedgerReports): Promise<{ pages: unknown[]; rows: LedgerEntry[] }> {
  const pages: unknown[] = [];
  let cursor: string | null = null;
  do {
    const page = await billing.listLedger(T, { limit: 7, cursor });
    pages.push(page);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return { pages, rows: await reports.all(T, {}) };
}

for (const kind of ['local', 's3'] as const) {
  forEachBackend(`ledger archive on ${kind}`, (env) => {
    let s3: TestS3 | undefined;
    let dir = '';
    let backend: ResultBackend;
    before(async function () {
      this.timeout(20_000);
      if (kind === 's3') s3 = await new TestS3().start();
    });
    after(async () => s3?.close());
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'gw-ledger-'));
      backend = kind === 'local'
        ? new LocalResultFiles(dir)
        : new S3ResultObjects({ bucket: s3!.bucket, prefix: `t${Math.random().toString(36).slice(2)}/`, region: 'us-east-1', endpoint: s3!.endpoint, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    const stores = () => env.pair<WalletStore>(() => new MemoryWalletStore(), (client, p) => new RedisWalletStore({ client, prefix: p }));
    const archiveOf = (store: WalletStore, clock: ManualClock, b: ResultBackend = backend, segmentLines?: number) => new LedgerArchive({ store, backend: b, clock, logger, retentionMs: HOUR, segmentLines });

    it('answers the same lines, seqs, order and cursors through the API and the CSV rows before and after archiving', async () => {
      const clock = new ManualClock(Date.parse('2026-03-01T20:00:00.000Z'));
      const { a } = stores();
      await trade(a, clock, 60); // 10 h: crosses midnight
      const archive = archiveOf(a, clock);
      const billing = new BillingService({ store: a, ledger: archive, clock });
      const reports = new LedgerReports(archive);
      const beforeArchive = await readAll(billing, reports);
      const moved = await archive.archiveTenant(T);
      expect(moved).to.be.greaterThan(100);
      const page = await a.list(T, 1000);
      expect(page.archivedThrough).to.equal(moved);
      expect(page.entries.length, 'only the last hour stays in the store').to.be.below(20);
      expect((await a.snapshot(T)).opening?.seq).to.equal(moved);
      expect(checkLedger(await a.snapshot(T)).violations).to.deep.equal([]);
      // A fresh reader (another process) answers the same.
      const fresh = archiveOf(a, clock);
      expect(await readAll(new BillingService({ store: a, ledger: fresh, clock }), new LedgerReports(fresh))).to.deep.equal(beforeArchive);
      expect(await readAll(billing, reports)).to.deep.equal(beforeArchive);
      // Segments hold each archived line once, one UTC day each, seqs 1..moved in order.
      const lines = await archived(backend);
      expect(lines.map((e) => e.seq)).to.deep.equal(Array.from({ length: moved }, (_, i) => i + 1));
      const keys: string[] = [];
      for await (const f of backend.list('ledger/')) keys.push(f.key);
      expect(keys.sort()).to.deep.equal([`ledger/${T}/2026-03-01/0000000000000001`, `ledger/${T}/2026-03-02/${String(lines.find((e) => e.at.startsWith('2026-03-02'))!.seq).padStart(16, '0')}`]);
      // A top-up repeated after its line left the store still answers its first entry.
      const repeat = await billing.topUp(T, 10_000_000, 'pay-1', 'first');
      expect(repeat).to.deep.include({ seq: 1, ref: 'pay-1', amount: 10_000_000 });
      expect(repeat.id).to.equal(lines[0]!.id);
      // Nothing more is due: a second run moves nothing.
      expect(await archive.archiveTenant(T)).to.equal(0);
    });

    it('trims nothing while the segment cannot be written or reads back different', async () => {
      const clock = new ManualClock(Date.parse('2026-03-01T08:00:00.000Z'));
      const { a } = stores();
      await trade(a, clock, 20);
      const failing: ResultBackend = Object.assign(Object.create(backend) as ResultBackend, { create: async () => Promise.reject(new Error('disk full')) });
      const corrupt: ResultBackend = Object.assign(Object.create(backend) as ResultBackend, {
        read: async (key: string) => {
          const { Readable: R } = await import('node:stream');
          void key;
          return R.from(['{"garbled":true}\n']) as Readable;
        },
      });
      for (const b of [failing, corrupt]) {
        const err = await archiveOf(a, clock, b).archiveTenant(T).then(() => null, (e: Error) => e);
        expect(err?.message).to.match(/disk full|reads back different/);
        const page = await a.list(T, 1000);
        expect([page.entries.length, page.archivedThrough ?? 0]).to.deep.equal([45, 0]);
        clock.advance(61_000); // the failed mover's lease runs out
      }
    });

    it('a mover cut between the write and the trim, then another run: nothing lost, nothing twice', async () => {
      const clock = new ManualClock(Date.parse('2026-03-01T08:00:00.000Z'));
      const { a, b } = stores();
      await trade(a, clock, 30);
      const all = (await a.snapshot(T)).entries;
      // The first mover writes its segment and dies before trimming (its lease still runs).
      const cut = Object.assign(Object.create(a) as WalletStore, { trimArchived: async () => Promise.reject(new Error('killed')) });
      await archiveOf(cut, clock).archiveTenant(T).catch(() => undefined);
      expect((await a.list(T, 1000)).archivedThrough ?? 0).to.equal(0);
      // Another process is refused while the lease runs, then takes over.
      expect(await archiveOf(b, clock).archiveTenant(T)).to.equal(0);
      clock.advance(61_000);
      const moved = await archiveOf(b, clock).archiveTenant(T);
      expect(moved).to.be.greaterThan(0);
      const lines = await archived(backend);
      expect(lines.map((e) => e.id)).to.deep.equal(all.slice(0, moved).map((e) => e.id));
      const kept = (await a.snapshot(T)).entries;
      expect([...lines, ...kept].map((e) => e.seq)).to.deep.equal(all.map((e) => e.seq));
      expect([...lines, ...kept].map((e) => e.id)).to.deep.equal(all.map((e) => e.id));
    });

    /** 30 trades' lines, and a mover that claimed 4 of them (fewer were due then, or its segments are smaller), stalled in its write past its lease. */
    const staleMover = async () => {
      const clock = new ManualClock(Date.parse('2026-03-01T08:00:00.000Z'));
      const { a, b } = stores();
      await trade(a, clock, 30);
      const all = (await a.snapshot(T)).entries;
      const stale = stalled(backend);
      const late = archiveOf(a, clock, stale.backend, 4).archiveTenant(T);
      await stale.atWrite;
      clock.advance(61_000); // its lease runs out
      return { clock, a, b, all, stale, late };
    };
    /** The segments then the store hold every line of `all` once, in order, and the ledger replays. */
    const expectEveryLineOnce = async (store: WalletStore, all: LedgerEntry[]) => {
      const snap = await store.snapshot(T);
      expect([...(await archived(backend)), ...snap.entries].map((e) => e.id)).to.deep.equal(all.map((e) => e.id));
      expect(checkLedger(snap).violations).to.deep.equal([]);
    };

    it('a stalled archiver landing after its lease ran out and another took over replaces no segment and loses nothing', async () => {
      const { clock, a, b, all, stale, late } = await staleMover();
      const moved = await archiveOf(b, clock, backend, 10).archiveTenant(T);
      expect(moved).to.be.greaterThan(10);
      const files = await segmentFiles(backend);
      const billing = new BillingService({ store: b, ledger: archiveOf(b, clock), clock });
      const before = await readAll(billing, new LedgerReports(archiveOf(b, clock)));
      stale.go();
      expect(await late, 'the stale one trims nothing').to.equal(0);
      expect(await segmentFiles(backend), 'every segment as the taker-over wrote it').to.deep.equal(files);
      const fresh = archiveOf(a, clock);
      expect(await readAll(new BillingService({ store: a, ledger: fresh, clock }), new LedgerReports(fresh))).to.deep.equal(before);
      await expectEveryLineOnce(a, all);
    });

    it('a stalled archiver landing first, while the taker-over is mid-write: each line once, none lost', async () => {
      const { clock, a, b, all, stale, late } = await staleMover();
      const taker = stalled(backend);
      const moving = archiveOf(b, clock, taker.backend, 10).archiveTenant(T);
      await taker.atWrite; // claimed 10 lines under its own lease
      stale.go();
      expect(await late, 'its segment is written, its trim refused (the lease is not its)').to.equal(0);
      expect((await archived(backend)).map((e) => e.seq)).to.deep.equal([1, 2, 3, 4]);
      taker.go();
      const moved = await moving;
      // The taker-over finds 4 lines of its 10 under the key: trims those, then claims from line 5 on.
      const lines = await archived(backend);
      expect(lines.length).to.equal(moved);
      expect(lines.map((e) => e.seq)).to.deep.equal(Array.from({ length: moved }, (_, i) => i + 1));
      const keys = Object.keys(await segmentFiles(backend)).sort();
      expect(keys.slice(0, 2)).to.deep.equal([`ledger/${T}/2026-03-01/0000000000000001`, `ledger/${T}/2026-03-01/0000000000000005`]);
      await expectEveryLineOnce(a, all);
      const page = await archiveOf(a, clock).list(T, 1000);
      expect(page.entries.map((e) => e.id)).to.deep.equal(all.map((e) => e.id).reverse());
    });

    it('a segment already there with other lines than ours: nothing is trimmed', async () => {
      const clock = new ManualClock(Date.parse('2026-03-01T08:00:00.000Z'));
      const { a } = stores();
      await trade(a, clock, 20);
      const first = (await a.snapshot(T)).entries[0]!;
      await backend.create(`ledger/${T}/2026-03-01/0000000000000001`, Buffer.from(JSON.stringify({ ...first, amount: first.amount + 1 }) + '\n'), 'application/x-ndjson');
      const err = await archiveOf(a, clock).archiveTenant(T).then(() => null, (e: Error) => e);
      expect(err?.message).to.match(/already there and holds other lines/);
      expect((await a.list(T, 1000)).archivedThrough ?? 0).to.equal(0);
    });

    it('two archivers at once (two connections) write every line once', async () => {
      const clock = new ManualClock(Date.parse('2026-03-01T00:00:00.000Z'));
      const { a, b } = stores();
      await trade(a, clock, 80);
      const all = (await a.snapshot(T)).entries;
      const [x, y] = await Promise.all([archiveOf(a, clock).archiveTenant(T), archiveOf(b, clock).archiveTenant(T)]);
      const lines = await archived(backend);
      expect(lines.length).to.equal(x + y);
      expect(new Set(lines.map((e) => e.id)).size).to.equal(lines.length);
      const snap = await a.snapshot(T);
      expect([...lines, ...snap.entries].map((e) => e.id)).to.deep.equal(all.map((e) => e.id));
      expect(checkLedger(snap).violations).to.deep.equal([]);
    });

    if (!env.isRedis && kind === 'local') {
      it('memory: lines past memory_ledger_entries leave for the archive whatever their age (never dropped)', async () => {
        const clock = new ManualClock(Date.parse('2026-03-01T08:00:00.000Z'));
        const s = new MemoryWalletStore({ ledgerEntries: 5 });
        await trade(s, clock, 10);
        const all = (await s.snapshot(T)).entries;
        const archive = new LedgerArchive({ store: s, backend, clock, logger, retentionMs: 0 }); // 0: no line leaves for its age
        expect(await archive.archiveTenant(T)).to.equal(all.length - 5);
        expect((await s.snapshot(T)).entries.map((e) => e.seq)).to.deep.equal(all.slice(-5).map((e) => e.seq));
        expect(checkLedger(await s.snapshot(T)).violations).to.deep.equal([]);
        const page = await archive.list(T, 100);
        expect(page.entries.map((e) => e.id)).to.deep.equal(all.map((e) => e.id).reverse());
      });

      it('memory: a segment\'s worth of lines past memory_ledger_entries moves at once, not at the next run (a chat burst held 150 MB of lines for the minute between runs)', async () => {
        const clock = new ManualClock(Date.parse('2026-03-01T08:00:00.000Z'));
        const s = new MemoryWalletStore({ ledgerEntries: 5 });
        const archive = new LedgerArchive({ store: s, backend, clock, logger, retentionMs: 0, segmentLines: 4 });
        archive.followStore();
        await store0(s, clock);
        const charge = async (n: number) => {
          for (let i = 0; i < n; i++) await s.charge(T, `c${clock.now()}-${i}-${Math.random()}`, 1, 'chat', new Date(clock.now()).toISOString());
        };
        const seqs = async () => (await archived(backend)).map((e) => e.seq);
        const upTo = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
        // A top-up and three charges (two lines each): 7 lines, 2 past the bound, not a segment.
        await charge(3);
        await new Promise((r) => setTimeout(r, 50));
        expect(await seqs()).to.deep.equal([]);
        // 9 lines: a segment (4) past the bound moves, with no run of the archive.
        await charge(1);
        // The segment is there before its lines are trimmed: wait for both.
        await waitFor(async () => (await seqs()).length === 4 && (await s.snapshot(T)).entries[0]?.seq === 5);
        expect(await seqs()).to.deep.equal(upTo(1, 4));
        expect((await s.snapshot(T)).entries.map((e) => e.seq)).to.deep.equal(upTo(5, 9));
        expect(checkLedger(await s.snapshot(T)).violations).to.deep.equal([]);
        // Again (said once until lines are trimmed); a run meanwhile moves the rest past the bound after it, each line once.
        await charge(3);
        expect(await archive.archiveTenant(T)).to.be.at.most(2);
        await waitFor(async () => (await seqs()).length === 10 && (await s.snapshot(T)).entries[0]?.seq === 11);
        expect(await seqs()).to.deep.equal(upTo(1, 10));
        expect((await s.snapshot(T)).entries.map((e) => e.seq)).to.deep.equal(upTo(11, 15));
        const page = await archive.list(T, 100);
        expect(page.entries.map((e) => e.seq)).to.deep.equal(upTo(1, 15).reverse());
      });
    }
  });
}

// kill -9 mid-archive: a real archiver process (test/redis/ledger-archiver.ts) moving a tenant's
// ledger from a real redis-server to segments in a local directory is killed at random moments,
// again and again, and restarted each time until everything due has moved. Then every line is
// exactly once in the segments or in Redis (same ids, same seqs), the ledger replays, and the
// ledger API answers what it answered before the first kill.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { checkLedger } from '../../engine/billing/invariant.ts';
import { LedgerArchive, parseSegment } from '../../engine/billing/ledger-archive.ts';
import { BillingService } from '../../engine/billing/service.ts';
import type { LedgerEntry } from '../../engine/billing/store.ts';
import { LocalResultFiles } from '../../engine/store/files/result-files.ts';
import { RedisWalletStore } from '../../engine/store/redis/wallets.ts';
import { systemClock } from '../../engine/util/clock.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';
import { ROOT } from '../helpers/gateway.ts';

const T = 'c0ffee00-0000-4000-8000-00000000dead';
const PREFIX = 'crash:';

/** Every line in the directory's segments of T, in key order (files half-written are not segments). */
function segments(dir: string): LedgerEntry[] {
  const out: LedgerEntry[] = [];
  const base = join(dir, 'ledger', T);
  let days: string[] = [];
  try {
    days = readdirSync(base).sort();
  } catch {
    return out;
  }
  for (const day of days) {
    for (const f of readdirSync(join(base, day)).filter((f) => /^\d{16}$/.test(f)).sort()) out.push(...parseSegment(readFileSync(join(base, day, f), 'utf8')));
  }
  return out;
}

describe('ledger archive: kill -9 mid-archive (real process, real redis-server)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let dir: string;
  before(async () => {
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), 'gw-ledger-crash-'));
  });
  after(async () => {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('loses and duplicates no line however often the archiver is killed', async () => {
    const client = redis.client();
    const store = new RedisWalletStore({ client, prefix: PREFIX });
    // 24,001 lines over three UTC days, all but the last ~90 charges older than the hour of retention.
    const start = Date.now() - 12_000 * 20_000 + 1_800_000;
    await store.credit(T, 'topup', 'pay', 1e12, '', new Date(start).toISOString());
    for (let i = 0; i < 12_000; i += 500) {
      await Promise.all(Array.from({ length: 500 }, (_, j) => store.charge(T, `openai/chat:${i + j}`, 100 + j, 'gpt-4o', new Date(start + (i + j) * 20_000).toISOString())));
    }
    const all = (await store.snapshot(T)).entries;
    expect(all).to.have.length(24_001);
    const billing = new BillingService({ store, ledger: new LedgerArchive({ store, backend: new LocalResultFiles(dir), clock: systemClock, logger: pino({ level: 'silent' }), retentionMs: 3_600_000 }) });
    const firstPage = await billing.listLedger(T, { limit: 200, cursor: '12345' });

    let kills = 0;
    let cut = 0; // kills that left a segment written but its lines not yet trimmed
    for (let round = 0; round < 200; round++) {
      const proc = spawn(process.execPath, [join(ROOT, 'test/redis/ledger-archiver.ts'), redis.url, PREFIX, dir, T, '150'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
      // Killed somewhere in its work: a random moment within a few segments' time after its first one.
      const working = new Promise<void>((r) => proc.stdout.on('data', () => r()));
      const killed = await Promise.race([exited.then(() => false), working.then(() => new Promise<boolean>((r) => setTimeout(() => r(true), Math.random() * 25)))]);
      if (killed) {
        proc.kill('SIGKILL');
        await exited;
        kills++;
        const lo = (await store.list(T, 1)).archivedThrough ?? 0;
        if (segments(dir).some((e) => e.seq === lo + 1)) cut++;
        await new Promise((r) => setTimeout(r, 160)); // the dead archiver's lease runs out
        continue;
      }
      expect(out, 'the archiver finished').to.match(/done\n$/);
      break;
    }
    const archived = segments(dir);
    const kept = (await store.snapshot(T)).entries;
    expect(archived.length, 'everything due moved').to.be.greaterThan(23_000);
    expect(kept.length, 'the last hour stays').to.be.greaterThan(100);
    expect([...archived, ...kept].map((e) => e.seq), 'every seq once, in order').to.deep.equal(all.map((e) => e.seq));
    expect([...archived, ...kept].map((e) => e.id), 'the same lines').to.deep.equal(all.map((e) => e.id));
    expect(checkLedger(await store.snapshot(T)).violations).to.deep.equal([]);
    expect(await billing.listLedger(T, { limit: 200, cursor: '12345' })).to.deep.equal(firstPage);
    console.log(`      ${kills} kills, ${cut} between a segment's write and its trim; ${archived.length} lines archived, ${kept.length} kept`);
    expect(kills, 'the archiver was killed mid-work').to.be.greaterThan(0);
  });
});

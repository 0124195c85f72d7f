// A ledger archiver in a process of its own, for test/redis/ledger-archive-crash.test.ts to kill:
// archives one tenant's due lines to a local directory (500-line segments, so a run writes many)
// until nothing is due, printing its progress, then "done".
//   node test/redis/ledger-archiver.ts <redis url> <key prefix> <dir> <tenant> <lease ms>
import pino from 'pino';
import { Redis } from 'ioredis';
import { LedgerArchive } from '../../engine/billing/ledger-archive.ts';
import { LocalResultFiles } from '../../engine/store/files/result-files.ts';
import { RedisWalletStore } from '../../engine/store/redis/wallets.ts';
import { systemClock } from '../../engine/util/clock.ts';

const [url, prefix, dir, tenant, lease] = process.argv.slice(2) as [string, string, string, string, string];
const client = new Redis(url);
const wallets = new RedisWalletStore({ client, prefix });
// Says when each segment's lines left Redis, so the test kills in the middle of the work.
const store = Object.assign(Object.create(wallets) as RedisWalletStore, {
  trimArchived: async (...a: Parameters<RedisWalletStore['trimArchived']>) => {
    const ok = await wallets.trimArchived(...a);
    process.stdout.write(`trimmed through ${a[1].last.seq}\n`);
    return ok;
  },
});
const archive = new LedgerArchive({
  store, backend: new LocalResultFiles(dir), clock: systemClock,
  logger: pino({ level: 'silent' }), retentionMs: 3_600_000, leaseMs: Number(lease), segmentLines: 500,
});
let moved = 0;
for (let n = -1; n !== 0; moved += n) {
  n = await archive.archiveTenant(tenant);
  process.stdout.write(`moved ${moved + n}\n`);
}
process.stdout.write('done\n');
client.disconnect();

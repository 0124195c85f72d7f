// Redis memory soak: `flock /tmp/bench.lock npx node bench/redis-soak.ts`. Does Redis'
// `used_memory` stay flat under steady chat-and-create traffic once the retention window has
// passed (issue 33: ±10%)?
//
// One redis-server, one `gateway serve --role all` (Redis store, sandbox off, results on a local
// directory, where the ledger archive writes too), the fake OpenAI upstream for sync chats and the
// image-tool upstream for provider_b tasks. Every retention is SOAK_RETENTION_MINUTES (3): ledger
// lines (then archived), closed holds and finished tasks; the archive runs every 10 s. The load is
// paced: SOAK_CHAT (40/s) sync chats and SOAK_CREATES (10/s) creates, each at most 64 in flight.
// After SOAK_WARMUP_SECONDS (window + 60 s) it samples `used_memory`, and the sizes of the keys
// that grow with traffic, every SOAK_SAMPLE_SECONDS (10) for SOAK_MINUTES (10), and prints the
// curve and its spread around the mean (the warm-up's samples too, marked).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { FakeOpenAI } from '../test/chat/fake-openai.ts';
import { call } from '../test/helpers/gateway.ts';
import { startRedis } from '../test/helpers/redis.ts';
import { countingImageToolUpstream } from '../test/redis/image-tool-upstream.ts';
import { spawnGateway, tenantWithKey, writeConfig } from '../test/redis/support.ts';
import { pace, pacedAnswers, pacedKind, spreadSummary, type PacedKind } from './support.ts';

const env = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
const WINDOW_MIN = env('SOAK_RETENTION_MINUTES', 3);
const WARMUP = env('SOAK_WARMUP_SECONDS', WINDOW_MIN * 60 + 60);
const MINUTES = env('SOAK_MINUTES', 10);
const SAMPLE = env('SOAK_SAMPLE_SECONDS', 10);
const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const mb = (n: number) => (n / 1048576).toFixed(2);

const redis = await startRedis();
const c = redis.client();
const chat = await new FakeOpenAI().start();
const images = await countingImageToolUpstream().start();
const dir = mkdtempSync(join(tmpdir(), 'gw-soak-results-'));
const hours = WINDOW_MIN / 60;
const config = writeConfig({ redisUrl: redis.url, prefix: 'gw', upstreamUrl: images.url, chatUrl: chat.url, chatKey: 'sk-upstream-test', results: `{ store: local, local: { dir: "${dir}" } }` });
// The archive every 10 s: 1,000,000 ms scaled by the config's timing.scale 0.01.
writeFileSync(config, readFileSync(config, 'utf8').replace('job_lock_ms: 30000 }', `job_lock_ms: 30000, task_retention_hours: ${hours}, hold_retention_hours: ${hours}, ledger_retention_hours: ${hours}, ledger_archive_interval_ms: 1000000 }`));
const gw = await spawnGateway(config, 'all');
const { tenantId, key } = await tenantWithKey(gw.url, '100000000.00');
const k = (name: string) => `gw:{t:${tenantId}}:${name}`;

let n = 0;
const kinds: PacedKind[] = [
  pacedKind('chat', env('SOAK_CHAT', 40), async () => (await call(gw.url, 'POST', '/v1/chat/completions', { key, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `chat ${n++}` }] } })).status),
  pacedKind('create', env('SOAK_CREATES', 10), async () => (await call(gw.url, 'POST', IMAGES, { key, body: { prompt: `task ${n++}` } })).status),
];
const stopPacing = pace(kinds, 64);

const info = async () => Number(/used_memory:(\d+)/.exec(await c.info('memory'))![1]);
const usage = async (key: string) => Number((await c.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) ?? 0);
const t0 = performance.now();
const rows: { t: number; used: number; warm: boolean }[] = [];
console.log(`redis soak: ${kinds.map((x) => `${x.name} ${x.rate}/s`).join(', ')}; retention ${WINDOW_MIN} min (ledger, holds, tasks); warm-up ${WARMUP} s, then ${MINUTES} min sampled every ${SAMPLE} s`);
console.log('   t (s)  used_memory MB  keys   ledger lines (KB)   holds (KB)   tenant task index (KB)   archived lines   answers');
for (let t = SAMPLE; t <= WARMUP + MINUTES * 60; t += SAMPLE) {
  await new Promise((r) => setTimeout(r, t0 + t * 1000 - performance.now()));
  const used = await info();
  const warm = t > WARMUP;
  rows.push({ t, used, warm });
  const [keys, lines, ledgerB, holdsN, holdsB, tasksN, tasksB, lo] = await Promise.all([
    c.dbsize(), c.llen(k('ledger')), usage(k('ledger')), c.hlen(k('holds')), usage(k('holds')), c.zcard(k('tasks')), usage(k('tasks')), c.hget(k('wallet'), 'lo'),
  ]);
  const answers = pacedAnswers(kinds);
  console.log(`${String(t).padStart(8)} ${mb(used).padStart(15)} ${String(keys).padStart(6)}   ${`${lines} (${Math.round(ledgerB / 1024)})`.padStart(17)}   ${`${holdsN} (${Math.round(holdsB / 1024)})`.padStart(10)}   ${`${tasksN} (${Math.round(tasksB / 1024)})`.padStart(22)}   ${String(lo ?? 0).padStart(14)}   ${warm ? '' : '(warm-up) '}${answers}`);
}
stopPacing();
// What else Redis holds: BullMQ's per-queue event streams (capped by BullMQ) and the biggest keys.
const big: [string, number][] = [];
for (const key of await c.keys('*')) big.push([key, await usage(key)]);
big.sort((a, b) => b[1] - a[1]);
console.log(`biggest keys: ${big.slice(0, 8).map(([key, b]) => `${key.replace(tenantId, '<t>')} ${Math.round(b / 1024)} KB`).join(', ')}`);
console.log(`after warm-up: used_memory ${spreadSummary(rows.filter((r) => r.warm).map((r) => r.used), mb)}`);
await new Promise((r) => setTimeout(r, 2000));
await gw.stop();
await chat.close();
await images.close();
await redis.stop();
rmSync(dir, { recursive: true, force: true });

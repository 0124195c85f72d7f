// Redis memory per sync chat request and per finished task, through a real gateway process:
// `npx node bench/redis-memory.ts`. One redis-server, one `gateway serve --role all` (Redis store,
// sandbox off), the fake OpenAI upstream for chat and the image-tool upstream for provider_b
// tasks. Sends BENCH_CHATS (1,000) sync chats, then BENCH_TASKS (1,000) creates and waits until
// every task is finished and settled; after each phase prints the `used_memory` delta, the keys
// written (by kind: the prefix with ids replaced) and which of them have no TTL.
// With BENCH_RETENTION_MINUTES (e.g. 1), every retention (ledger lines, closed holds, finished
// tasks) is that long and the ledger archive runs every 10 s: after each phase it also waits out
// the window, sends 100 chats (each close forgets up to 10 due holds) and prints what is still
// retained per 1,000 requests of the phase.
import type { Redis } from 'ioredis';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeOpenAI } from '../test/chat/fake-openai.ts';
import { call, waitForTask } from '../test/helpers/gateway.ts';
import { startRedis } from '../test/helpers/redis.ts';
import { countingImageToolUpstream } from '../test/redis/image-tool-upstream.ts';
import { spawnGateway, tenantWithKey, writeConfig } from '../test/redis/support.ts';

const CHATS = Number(process.env.BENCH_CHATS ?? 1000);
const TASKS = Number(process.env.BENCH_TASKS ?? 1000);
const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const WINDOW_MIN = Number(process.env.BENCH_RETENTION_MINUTES ?? 0);

const used = async (c: Redis) => Number(/used_memory:(\d+)/.exec(await c.info('memory'))![1]);

/** Every key by kind (ids, hashes and numbers collapsed), with its count, bytes and TTL state. */
async function keys(c: Redis): Promise<Map<string, { n: number; bytes: number; noTtl: number }>> {
  const out = new Map<string, { n: number; bytes: number; noTtl: number }>();
  for (const k of await c.keys('*')) {
    const kind = k
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
      .replace(/[a-z]+_[A-Za-z0-9]{16,}/g, '<id>')
      .replace(/[0-9a-f]{64}/g, '<sha>')
      .replace(/:\d+(?=$|:)/g, ':<n>');
    const e = out.get(kind) ?? { n: 0, bytes: 0, noTtl: 0 };
    e.n++;
    e.bytes += Number(await c.call('MEMORY', 'USAGE', k, 'SAMPLES', '0'));
    if ((await c.pttl(k)) === -1) e.noTtl++;
    out.set(kind, e);
  }
  return out;
}

function diff(before: Map<string, { n: number; bytes: number; noTtl: number }>, after: typeof before, per: number) {
  const rows: Record<string, string> = {};
  for (const [k, a] of after) {
    const b = before.get(k) ?? { n: 0, bytes: 0, noTtl: 0 };
    if (a.n === b.n && a.bytes === b.bytes) continue;
    rows[k] = `keys +${a.n - b.n}, ${Math.round((a.bytes - b.bytes) / per)} B/op (MEMORY USAGE), ${a.noTtl ? `${a.noTtl} without TTL` : 'all with TTL'}`;
  }
  return rows;
}

async function pool<T>(n: number, conc: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: conc }, async () => {
    while (next < n) { const i = next++; out[i] = await fn(i); }
  }));
  return out;
}

/** Waits out the retention window (plus two archive runs), then 100 chats that forget due holds. */
async function afterWindow(key: string, k0: Awaited<ReturnType<typeof keys>>, m0: number, per: number) {
  await new Promise((r) => setTimeout(r, WINDOW_MIN * 60_000 + 25_000));
  await pool(100, 10, (i) => call(gw.url, 'POST', '/v1/chat/completions', { key, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `drain ${i}` }] } }));
  await new Promise((r) => setTimeout(r, 12_000));
  return { afterWindowPer1000: Math.round(((await used(c)) - m0) * 1000 / per), afterWindowKeys: diff(k0, await keys(c), per), note: 'includes the 100 chats sent after the window' };
}

const redis = await startRedis();
const c = redis.client();
const chat = await new FakeOpenAI().start();
const images = await countingImageToolUpstream().start();
const dir = mkdtempSync(join(tmpdir(), 'gw-redis-memory-'));
const config = writeConfig({ redisUrl: redis.url, prefix: 'gw', upstreamUrl: images.url, chatUrl: chat.url, chatKey: 'sk-upstream-test', results: `{ store: local, local: { dir: "${dir}" } }` });
const h = WINDOW_MIN / 60;
// The archive every 10 s: 1,000,000 ms scaled by the config's timing.scale 0.01.
if (WINDOW_MIN) writeFileSync(config, readFileSync(config, 'utf8').replace('job_lock_ms: 30000 }', `job_lock_ms: 30000, task_retention_hours: ${h}, hold_retention_hours: ${h}, ledger_retention_hours: ${h}, ledger_archive_interval_ms: 1000000 }`));
const gw = await spawnGateway(config, 'all');
try {
  const { key } = await tenantWithKey(gw.url, '10000000.00');
  // warm: the key record, scripts, the first day's spend
  await call(gw.url, 'POST', '/v1/chat/completions', { key, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'warm' }] } });
  let k0 = await keys(c);
  let m0 = await used(c);
  const chats = await pool(CHATS, 10, (i) => call(gw.url, 'POST', '/v1/chat/completions', { key, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `chat ${i}` }] } }));
  if (chats.some((r) => r.status !== 200)) throw new Error(`chat: ${chats.find((r) => r.status !== 200)!.status}`);
  const chatRow = { usedMemoryPer1000: Math.round(((await used(c)) - m0) * 1000 / CHATS), keys: diff(k0, await keys(c), CHATS) };
  console.log(JSON.stringify({ chats: CHATS, ...chatRow }, null, 2));
  if (WINDOW_MIN) console.log(JSON.stringify({ chats: CHATS, ...(await afterWindow(key, k0, m0, CHATS)) }, null, 2));

  k0 = await keys(c);
  m0 = await used(c);
  const ids = await pool(TASKS, 10, async (i) => {
    const r = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: `task ${i}` } });
    if (r.status !== 200 && r.status !== 202) throw new Error(`create: ${r.status} ${JSON.stringify(r.body)}`);
    return (r.body as { task_info: { id: string } }).task_info.id;
  });
  await pool(TASKS, 10, (i) => waitForTask(gw.url, `${IMAGES}/${ids[i]}`, key, ['completed', 'failed'], 120_000));
  // settle: the unsettled index empties once every task is finalized
  for (let i = 0; i < 600 && (await c.zcard('gw:tasks:unsettled')) > 0; i++) await new Promise((r) => setTimeout(r, 100));
  const taskRow = { usedMemoryPer1000: Math.round(((await used(c)) - m0) * 1000 / TASKS), keys: diff(k0, await keys(c), TASKS) };
  console.log(JSON.stringify({ tasks: TASKS, ...taskRow }, null, 2));
  if (WINDOW_MIN) console.log(JSON.stringify({ tasks: TASKS, ...(await afterWindow(key, k0, m0, TASKS)) }, null, 2));
} finally {
  rmSync(dir, { recursive: true, force: true });
  await gw.stop();
  await chat.close();
  await images.close();
  await redis.stop();
}

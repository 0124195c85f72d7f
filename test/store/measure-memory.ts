// Measures Redis memory per finished task and per webhook delivery (the numbers in
// docs/redis-layout.md). Run: npx node test/store/measure-memory.ts
import { RedisTaskStore } from '../../engine/store/redis/tasks.ts';
import { RedisWebhookStore } from '../../engine/store/redis/webhooks.ts';
import type { TaskRecord } from '../../engine/tasks/task.ts';
import { startRedis } from '../helpers/redis.ts';
import { deliveryRecord } from '../webhooks/support/store-contract.ts';

const N = 2_000;
const at = (ms: number) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + ms).toISOString();

const redis = await startRedis();
const c = redis.client();
const used = async () => Number(/used_memory:(\d+)/.exec(await c.info('memory'))![1]);
const usage = async (k: string) => Number(await c.call('MEMORY', 'USAGE', k, 'SAMPLES', '0'));

// ---- finished tasks ----
const tasks = new RedisTaskStore({ client: c, prefix: 'gw:' });
const task = (i: number): TaskRecord => ({
  id: `9f8e7d6c-5b4a-4928-9706-${String(i).padStart(12, '0')}`,
  tenant_id: '7d3f1c2a-0000-4000-8000-000000000001',
  vendor: 'provider_b',
  route: 'provider_b/diffusion',
  model_name: 'diffusion-xl',
  status: 'processing',
  created_at: at(0),
  updated_at: at(0),
  request: { prompt: 'A lighthouse on a cliff at dusk, dramatic clouds, cinematic lighting, ultra detailed, 35mm photo', size: '1024x1024', n: 1, style: 'photographic' },
  upstream_task_id: `up_${String(i).padStart(24, '0')}`,
  deadline_at: Date.parse(at(600_000)),
  poll_failures: 0,
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  hold: 34_000,
  checked_at: Date.parse(at(40_000)),
  poll_n: 7,
});
let before = await used();
for (let i = 0; i < N; i++) {
  const t = task(i);
  await tasks.create(t);
  await tasks.transition(t.id, ['processing'], {
    status: 'completed',
    result: { images: [`https://cdn.provider-b.example.com/outputs/2026/01/01/${t.id}/image_0.png`] },
    charge: 34_000,
    finalized: false,
    updated_at: at(42_000),
  });
  await tasks.transition(t.id, ['completed'], { finalized: true });
}
const perTask = ((await used()) - before) / N;
const oneTask = await usage(`gw:{task:${task(0).id}}`);
const taskBytes = (await c.get(`gw:{task:${task(0).id}}`))!.length;

// ---- deliveries: 3 attempts each, 10 endpoints, one event per delivery ----
const hooks = new RedisWebhookStore({ client: c, prefix: 'gw:' });
const body = (i: number) =>
  JSON.stringify({ id: `evt_${String(i).padStart(24, '0')}`, type: 'task.succeeded', created_at: at(0), data: { task_info: { id: task(i).id, status: 'completed', created_at: at(0), updated_at: at(42_000) }, images: [`https://cdn.provider-b.example.com/outputs/2026/01/01/${task(i).id}/image_0.png`] } });
before = await used();
let bodyBytes = 0;
for (let i = 0; i < N; i++) {
  const id = `whd_${String(i).padStart(24, '0')}`;
  const b = body(i);
  bodyBytes += b.length;
  await hooks.createDelivery(deliveryRecord(id, { event_id: `evt_${String(i).padStart(24, '0')}`, endpoint_id: `we_${String(i % 10).padStart(24, '0')}`, body: b }));
  for (let n = 1; n <= 3; n++) {
    await hooks.recordAttempt(
      { delivery_id: id, series: 1, attempt: n, at: at(n * 1000), status_code: n < 3 ? 503 : 200, latency_ms: 120, error: n < 3 ? 'HTTP 503' : null, next_attempt_at: n < 3 ? at(n * 16_000) : null },
      { status: n < 3 ? 'pending' : 'succeeded', next_attempt_at: n < 3 ? at(n * 16_000) : null, updated_at: at(n * 1000) },
    );
  }
}
const perDelivery = ((await used()) - before) / N;

console.log(JSON.stringify({ redis: (await c.info('server')).match(/redis_version:(\S+)/)![1], N, finishedTask: { recordBytes: taskBytes, memoryUsageOneKey: oneTask, usedMemoryPerTask: Math.round(perTask) }, delivery: { avgBodyBytes: Math.round(bodyBytes / N), attempts: 3, usedMemoryPerDelivery: Math.round(perDelivery), withoutBody: Math.round(perDelivery - bodyBytes / N) } }, null, 2));
await redis.stop();

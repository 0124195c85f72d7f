// Heap held per task in flight: `npx node --expose-gc bench/inflight.ts`
//
// The gateway in this process (memory store, model D, result copy off) against
// bench/stub-upstream.ts with tasks that never finish (every poll finds them running), so the
// tasks created stay in flight, submitted and waiting for their next poll: the state where
// almost all of them are under load. BENCH_INFLIGHT (2000,6000): the in-flight counts to reach;
// at each, once every submission has been answered, the heap after a full collection (and, with
// BENCH_SNAPSHOT_DIR, a heap snapshot there). Heap per task in flight = the difference ÷ the tasks.
import { writeHeapSnapshot } from 'node:v8';
import { join } from 'node:path';
import { inProcess, load } from './memory.ts';
import { createRequest } from './support.ts';

const D = '/vendors/provider_d/v1/model_d/generation';
const mb = (n: number) => (n / 1048576).toFixed(1);
const { compactHeap } = await import('../engine/util/heap.ts');
const { stub, gw, pool, headers } = await inProcess({ polls: 1e9 });
const points = (process.env.BENCH_INFLIGHT ?? '2000,6000').split(',').map(Number);
let created = 0;
// Warm-up: every code path compiled and the bounded ledgers started, then a baseline.
const readings: { n: number; heap: number }[] = [];
for (const target of [200, ...points]) {
  let sent = 0;
  const st = await load(pool, D, headers, createRequest(), 64, () => sent++ >= target - created);
  created = target;
  while (stub.submits() < created) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 500));
  compactHeap();
  const heap = process.memoryUsage().heapUsed;
  readings.push({ n: created, heap });
  console.log(`${created} tasks in flight ${JSON.stringify(st)}: heap ${mb(heap)} MB`);
  if (process.env.BENCH_SNAPSHOT_DIR) console.log('  snapshot', writeHeapSnapshot(join(process.env.BENCH_SNAPSHOT_DIR, `inflight-${created}.heapsnapshot`)));
}
for (let i = 2; i < readings.length; i++) {
  const a = readings[i - 1], b = readings[i];
  console.log(`${a.n} → ${b.n}: ${Math.round((b.heap - a.heap) / (b.n - a.n))} bytes of heap per task in flight`);
}
await pool.close();
await gw.close();
await stub.close();
process.exit(0);

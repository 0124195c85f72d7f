// Concurrent identical provider pushes across two `gateway serve` processes on one Redis: the
// compare-and-set in the store decides, so exactly one push answers `accepted`, the other 19
// `ignored`, and the task is settled once (model D with a callback declared, as in
// test/tasks/callbacks.test.ts).
import { expect } from 'chai';
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/gateway.ts';
import { startGatewayPair, type GatewayPair } from '../helpers/gateway-pair.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';
import { vendorsWithCallback } from '../tasks/callback-vendor.ts';
import { ledger, tenantWithKey, type GatewayProcess } from './support.ts';

const D = '/vendors/provider_d/v1/model_d/generation';
const PUBLIC = 'https://gw.example.com';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('redis mode: 20 concurrent identical pushes over two processes', function () {
  this.timeout(120_000);
  let pair: GatewayPair;
  let up: FakeUpstream;
  let dir: string;
  let a: GatewayProcess;
  let b: GatewayProcess;
  const callbacks = new Map<string, string>();
  let seq = 0;
  before(async () => {
    dir = vendorsWithCallback();
    // writeConfig serves provider_b always.
    cpSync(join(ROOT, 'vendors/provider_b.yaml'), join(dir, 'provider_b.yaml'));
    cpSync(join(ROOT, 'vendors/provider_b'), join(dir, 'provider_b'), { recursive: true });
    up = new FakeUpstream();
    up.on('POST', '/api/v1/services/aigc/text2image/image-synthesis', (req, res) => {
      const id = `race-${++seq}`;
      callbacks.set(id, req.body.parameters?.callback_url);
      json(res, 200, { request_id: `r-${id}`, output: { task_id: id, task_status: 'PENDING' } });
    });
    // Polls see the task running: only the pushes end it.
    up.on('GET', /^\/api\/v1\/tasks\/[^/]+$/, (req, res) => json(res, 200, { request_id: 'r', output: { task_id: req.path.split('/')[4], task_status: 'RUNNING' } }));
    await up.start();
    pair = await startGatewayPair({ prefix: 'race', upstreamUrl: up.url, providerDUrl: up.url, vendorsDir: dir, publicBaseUrl: PUBLIC });
    ({ a, b } = pair);
  });
  after(async () => {
    await pair?.stop();
    await up?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const final of ['SUCCEEDED', 'FAILED'] as const) {
    it(`${final}: exactly one accepted, 19 ignored, settled once`, async () => {
      const { tenantId, key } = await tenantWithKey(a.url);
      const created = await fetch(`${a.url}${D}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'a fox in the snow', n: 1 }) });
      expect(created.status).to.equal(202);
      const taskId = ((await created.json()) as { task_info: { id: string } }).task_info.id;
      let upstreamId: string | undefined;
      for (let i = 0; !upstreamId; i++) {
        if (i > 200) throw new Error('the task was not submitted');
        upstreamId = [...callbacks].find(([, url]) => url?.includes(taskId))?.[0];
        await sleep(25);
      }
      const path = callbacks.get(upstreamId)!.slice(PUBLIC.length);
      const body = JSON.stringify(final === 'SUCCEEDED'
        ? { request_id: 'r', output: { task_id: upstreamId, task_status: 'SUCCEEDED', results: [{ url: `https://results.example/${upstreamId}/0.png` }] } }
        : { request_id: 'r', output: { task_id: upstreamId, task_status: 'FAILED', message: 'no' } });
      const answers = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
        const res = await fetch(`${(i % 2 ? a : b).url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        return `${res.status} ${((await res.json()) as { status: string }).status}`;
      }));
      const counts = answers.reduce<Record<string, number>>((m, x) => ({ ...m, [x]: (m[x] ?? 0) + 1 }), {});
      console.log(`      ${final}: ${JSON.stringify(counts)}`);
      expect(counts).to.deep.equal({ '200 accepted': 1, '200 ignored': 19 });
      for (let i = 0; ; i++) {
        const kinds = (await ledger(a.url, tenantId)).filter((e) => e.ref === taskId).map((e) => e.kind);
        if (kinds.length === 2) {
          expect(kinds.sort()).to.deep.equal(final === 'SUCCEEDED' ? ['hold', 'settle'] : ['hold', 'release']);
          break;
        }
        if (i > 100) throw new Error(`ledger of ${taskId}: ${kinds.join(', ')}`);
        await sleep(50);
      }
    });
  }
});

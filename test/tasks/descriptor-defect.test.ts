// A descriptor's own expression that fails on an answer (a JSONata error, not a missing field)
// is a defect of the descriptor, not the provider's failure: the task fails with 4011
// "Descriptor Expression Failed" (never 3003), the cause is logged, and
// gateway_descriptor_defects_total counts it by route and expression. Model D's descriptor is
// copied with one expression made to throw on a field its fixtures lack (so `check`, and `serve`
// with it, accept the descriptor) and that a real fixture upstream sends.
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { Gateway } from '../../engine/gateway.ts';
import { registry } from '../../engine/metrics/metrics.ts';
import { call, newTenant, ROOT, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { metricValue } from '../helpers/metrics.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';

const D = '/vendors/provider_d/v1/model_d/generation';

/** provider_d as shipped, with `from` replaced by `to` (once, in model D's route). */
function vendorsWith(from: string, to: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-defect-'));
  cpSync(join(ROOT, 'vendors/provider_d'), join(dir, 'provider_d'), { recursive: true });
  const yaml = readFileSync(join(ROOT, 'vendors/provider_d.yaml'), 'utf8');
  expect(yaml).to.contain(from);
  writeFileSync(join(dir, 'provider_d.yaml'), yaml.replace(from, to));
  return dir;
}

describe('a descriptor expression that fails on an answer: 4011, logged and counted', function () {
  this.timeout(30_000);
  let up: FakeUpstream;
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });

  before(async () => {
    up = new FakeUpstream();
    // `odd` is a field the shipped fixtures do not have: the copied expressions throw on it.
    up.on('POST', '/api/v1/services/aigc/text2image/image-synthesis', (_req, res) => json(res, 200, { request_id: 'r-1', output: { task_id: 'up-1', task_status: 'PENDING', odd: 'x' } }));
    up.on('GET', /^\/api\/v1\/tasks\/[^/]+$/, (_req, res) => json(res, 200, { request_id: 'r-1', output: { task_id: 'up-1', task_status: 'RUNNING', odd: 'x' } }));
    await up.start();
  });
  after(async () => {
    await up?.close();
  });

  async function failsWith(from: string, to: string, expression: string): Promise<void> {
    const dir = vendorsWith(from, to);
    let gw: Gateway | undefined;
    try {
      gw = await startTestGateway({
        sandbox: false, vendorsDir: dir, only: ['provider_d'], scale: 0.01, logger,
        upstreams: { provider_d: { base_url: up.url, credentials: { api_key: 'sk-d' } } },
      });
      const before = metricValue(await registry.metrics(), 'gateway_descriptor_defects_total', { route: 'provider_d/image_generation', expression });
      const { tenant, key } = await newTenant(gw, { credits: 100 });
      const created = await call(gw.url, 'POST', D, { key, body: { prompt: 'a fox in the snow', n: 1 } });
      expect(created.status, created.text).to.equal(202);
      const id: string = created.body.task_info.id;
      const done = await waitForTask(gw.url, `${D}/${id}`, key);
      expect(done.body.task_info.status).to.equal('failed');
      expect(done.body.task_info.error.code).to.equal(4011);
      expect(done.body.task_info.error.title).to.equal('Descriptor Expression Failed');
      expect(done.body.task_info.error.detail).to.contain(expression);
      expect(metricValue(await registry.metrics(), 'gateway_descriptor_defects_total', { route: 'provider_d/image_generation', expression })).to.equal(before + 1);
      const logged = lines.find((l) => l.msg === 'a descriptor expression failed' && l.expression === expression);
      expect(logged, 'the defect is logged with its cause').to.not.equal(undefined);
      expect((logged!.err as { message?: string }).message).to.be.a('string').and.not.equal('');
      // A failed task is never billed.
      expect((await gw.billing.checkInvariant(tenant.id)).ok).to.equal(true);
    } finally {
      await gw?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it("the poll's status expression", () => failsWith('        status: output.task_status\n', '        status: "$exists(output.odd) ? $number(output.odd) : output.task_status"\n', 'poll.status'));

  it("the submit answer's task id expression", () => failsWith('        task_id: output.task_id\n', '        task_id: "$exists(output.odd) ? $number(output.odd) : output.task_id"\n', 'submit.task_id'));
});

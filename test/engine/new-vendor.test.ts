// A brand-new vendor, written as YAML + fixtures in a temp folder, runs through the engine
// with no TypeScript change: its route, schema, mapping and fixtures are all it takes.
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Gateway } from '../../engine/gateway.ts';
import { call, DEMO_KEY, startTestGateway, waitForTask } from '../helpers/gateway.ts';

const DESCRIPTOR = `
format: 1
vendor: acme
title: Acme renderer ("async header" upstream style)
upstream:
  auth: { scheme: bearer, credential: token }
  headers: { X-Async: enable }
routes:
  - id: render
    kind: async
    method: POST
    path: /v1/render
    status: 202
    model_name: acme-render-1
    max_execution_ms: 600000
    request:
      schema:
        type: object
        additionalProperties: false
        required: [prompt]
        properties:
          prompt: { type: string, minLength: 1, maxLength: 100 }
          count: { type: integer, minimum: 1, maximum: 3, default: 2 }
    upstream:
      submit:
        path: /api/v1/render
        body: '{ "model": "acme-render-1", "input": { "prompt": prompt }, "parameters": { "n": count } }'
        task_id: output.task_id
      poll:
        path: /api/v1/tasks/{upstream_task_id}
        interval_ms: 1000
        status: output.task_status
        status_map: { PENDING: pending, RUNNING: processing, SUCCEEDED: completed, FAILED: failed }
        error_message: output.message
      cancel: local
    result:
      images: output.results.url
    pricing: { unit: image, unit_price: "0.01", quantity: count }
`;

const FIXTURES: Record<string, unknown> = {
  created: { output: { task_id: '{{upstream_task_id}}', task_status: 'PENDING' }, request_id: 'req-1' },
  running: { output: { task_id: '{{upstream_task_id}}', task_status: 'RUNNING' } },
  succeeded: { output: { task_id: '{{upstream_task_id}}', task_status: 'SUCCEEDED', results: [{ url: '{{files_url}}/{{upstream_task_id}}/a.png' }, { url: '{{files_url}}/{{upstream_task_id}}/b.png' }] } },
  failed: { output: { task_id: '{{upstream_task_id}}', task_status: 'FAILED', code: 'DataInspectionFailed', message: 'Input data may contain inappropriate content.' } },
};

describe('a brand-new vendor dropped in as data', () => {
  let gw: Gateway;
  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-vendor-'));
    writeFileSync(join(dir, 'acme.yaml'), DESCRIPTOR);
    mkdirSync(join(dir, 'acme', 'fixtures', 'render'), { recursive: true });
    for (const [name, body] of Object.entries(FIXTURES)) writeFileSync(join(dir, 'acme', 'fixtures', 'render', `${name}.json`), JSON.stringify(body));
    gw = await startTestGateway({ vendorsDir: dir });
  });
  after(() => gw.close());

  it('serves its route and drives a task to completed with its result mapping', async () => {
    const created = await call(gw.url, 'POST', '/vendors/acme/v1/render', { key: DEMO_KEY, body: { prompt: 'a robot' } });
    expect(created.status).to.equal(202);
    const done = await waitForTask(gw.url, `/vendors/acme/v1/render/${created.body.task_info.id}`, DEMO_KEY);
    expect(done.body.task_info.status, JSON.stringify(done.body)).to.equal('completed');
    expect(done.body.images).to.have.length(2);
    expect(done.body.images[0]).to.match(/^http:\/\/127\.0\.0\.1:\d+\/_files\/sbx\w+\/a\.png$/);
  });

  it('its schema validates and its failure fixture fails the task with 3005', async () => {
    const bad = await call(gw.url, 'POST', '/vendors/acme/v1/render', { key: DEMO_KEY, body: { prompt: 'x', count: 9 } });
    expect(bad.status).to.equal(400);
    expect(bad.body.error_code).to.equal(2003);
    expect(bad.body.errors[0].pointer).to.equal('/count');
    const created = await call(gw.url, 'POST', '/vendors/acme/v1/render', { key: DEMO_KEY, body: { prompt: 'a robot [sandbox:fail]' } });
    const done = await waitForTask(gw.url, `/vendors/acme/v1/render/${created.body.task_info.id}`, DEMO_KEY);
    expect(done.body.task_info.status).to.equal('failed');
    expect(done.body.task_info.error).to.deep.equal({ code: 3005, title: 'Upstream Service Execution Failed', detail: 'The provider could not complete the task: Input data may contain inappropriate content.' });
  });

  it('only the vendors of the folder are served', async () => {
    const r = await call(gw.url, 'POST', '/vendors/provider_b/v1/tob/diffusion', { key: DEMO_KEY, body: { prompt: 'x' } });
    expect(r.status).to.equal(404);
  });
});

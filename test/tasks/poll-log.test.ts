// The Veo case of issue 31 at run time: a descriptor that sends a path-shaped operation name
// through {upstream_task_id} (its fixtures use a plain id, so check lets it through) polls a
// path the provider does not know. Each failed poll is logged with its method, path and HTTP
// status, so the operator sees `/v1beta/models%2F…` answered 404 instead of five silent polls;
// descriptors and the OpenAPI document / route table describe the cancel policies.
import { expect } from 'chai';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { buildOpenApi } from '../../engine/docs/openapi.ts';
import type { Gateway } from '../../engine/gateway.ts';
import { createLogger } from '../../engine/log/logger.ts';
import { folderSet } from '../../engine/tooling/sources.ts';
import { routeTable } from '../../engine/tooling/routes.ts';
import { call, newTenant, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';
import { answerVendorsDir } from './support/answer-vendors.ts';

describe('a poll path the provider does not know is logged with its path and status', function () {
  this.timeout(30_000);
  let up: FakeUpstream;
  let gw: Gateway;
  let dir: string;
  const lines: Record<string, unknown>[] = [];

  before(async () => {
    dir = answerVendorsDir();
    // The natural mistake: the operation name through the encoded placeholder.
    const yaml = readFileSync(join(dir, 'qveo.yaml'), 'utf8').replace('path: /v1beta/{upstream_task_id:path}', 'path: /v1beta/{upstream_task_id}');
    writeFileSync(join(dir, 'qveo.yaml'), yaml);
    for (const name of ['created', 'running', 'succeeded', 'failed']) {
      const file = join(dir, 'qveo/fixtures/video', `${name}.json`);
      writeFileSync(file, readFileSync(file, 'utf8').replaceAll('models/veo-3.0-generate-001/operations/', ''));
    }
    up = new FakeUpstream();
    up.on('POST', '/v1beta/models/veo-3.0-generate-001:predictLongRunning', (_req, res) => json(res, 200, { name: 'models/veo-3.0-generate-001/operations/op1' }));
    await up.start();
    const sink = new Writable({ write(chunk, _enc, done) { for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l)); done(); } });
    gw = await startTestGateway({ sandbox: false, vendorsDir: dir, only: ['qveo'], scale: 0.01, logger: createLogger('info', sink), upstreams: { qveo: { base_url: up.url, credentials: { api_key: 'k' } } } });
  });
  after(async () => {
    await gw?.close();
    await up?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fails the task after the poll error limit, each failure naming the path and the 404', async () => {
    const { key } = await newTenant(gw, { credits: 100 });
    const r = await call(gw.url, 'POST', '/vendors/qveo/v1/video', { key, body: { prompt: 'a fox' } });
    const failed = await waitForTask(gw.url, `/vendors/qveo/v1/video/${r.body.task_info.id}`, key);
    expect(failed.body.task_info.error).to.include({ code: 3002 });
    const polls = lines.filter((l) => l.msg === 'upstream poll failed; will retry');
    expect(polls.length).to.be.greaterThan(0);
    expect(polls[0]).to.include({ method: 'GET', path: '/v1beta/models%2Fveo-3.0-generate-001%2Foperations%2Fop1', http_status: 404, vendor: 'qveo' });
  });

  it('the route table and the OpenAPI document describe each cancel policy', async () => {
    const set = folderSet(answerVendorsDir());
    const descriptors = [...set.vendors.values()].map((v) => v.descriptor);
    const rows = (await routeTable(descriptors)).filter((x) => x.kind === 'cancel');
    expect(rows.map((x) => [x.vendor, x.route, x.status, x.of])).to.deep.equal([
      ['qfal', 'image', 200, 'tasks of image; cancel sent upstream: PUT {url:cancel}'],
      ['qfal', 'image_direct', 200, 'tasks of image_direct; cancelled locally: the provider may still bill'],
      ['qveo', 'video', 409, 'tasks of video; not cancellable (2006): the task runs on'],
    ]);
    const doc = buildOpenApi(descriptors) as { paths: Record<string, Record<string, { description: string; responses: Record<string, { 'x-error-codes'?: number[] }> }>> };
    const veo = doc.paths['/vendors/qveo/v1/video/{task_id}/cancel']!.post!;
    expect(veo.responses['409']!['x-error-codes']).to.deep.equal([2000, 2006]);
    expect(veo.description).to.contain('the cancel is refused with 409 / 2006 and the task goes on');
    const fal = doc.paths['/vendors/qfal/v1/image/{task_id}/cancel']!.post!;
    expect(fal.responses['409']!['x-error-codes']).to.deep.equal([2000]);
    expect(fal.description).to.contain('the provider is asked once to stop the task');
    const falTask = (doc as unknown as { components: { schemas: Record<string, { properties: Record<string, { description: string }> }> } }).components.schemas.qfal_image_task!;
    expect(falTask.properties.seed!.description).to.equal('Result field, present when the task is completed and the provider returned it.');
  });
});

// `gateway check` runs each async route's fixtures end to end (engine/sandbox/fixture-run.ts):
// each failure it catches, positioned file:line:col in the descriptor, and `serve` refusing the
// same descriptor. Each test starts from the scaffold (which passes) and breaks it one way.
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { LoadError } from '../../engine/config/yaml-source.ts';
import { runChecks } from '../../engine/tooling/checks.ts';
import type { Finding } from '../../engine/tooling/findings.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { cleanTempDirs, editDescriptor, lineOf, vendorsDir, writeFixture } from './support.ts';

const errors = async (dir: string): Promise<Finding[]> => (await runChecks({ paths: [dir] })).findings.filter((f) => f.severity === 'error');
const ID = '{{upstream_task_id}}';

describe('gateway check runs the fixtures end to end', () => {
  after(cleanTempDirs);

  it('an id holding "/" sent through {upstream_task_id} (the Veo case) is an error at the poll path; {upstream_task_id:path} passes', async () => {
    const dir = vendorsDir();
    const text = editDescriptor(dir, 'acme', (d) => {
      d.routes[0].upstream.submit.task_id = 'name';
    });
    writeFixture(dir, 'acme', 'generation', 'created', { name: `models/acme-1/operations/${ID}`, output: { status: 'QUEUED' } });
    const f = await errors(dir);
    const poll = f.find((x) => x.pointer === '/routes/0/upstream/poll/path')!;
    expect(poll, JSON.stringify(f)).to.exist;
    expect(poll.check).to.equal('fixture');
    expect(poll.file).to.match(/acme\.yaml$/);
    expect(poll.line).to.equal(lineOf(text, 'path: /api/v1/generations/{upstream_task_id}'));
    expect(poll.col).to.be.greaterThan(1);
    expect(poll.message).to.match(/holds "\/", which \{upstream_task_id\} sends percent-encoded as one segment \(\/api\/v1\/generations\/models%2Facme-1%2Foperations%2FsbxSampleTask0001\).*Write \{upstream_task_id:path\}/);
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].upstream.poll.path = '/v1beta/{upstream_task_id:path}';
      d.routes[0].upstream.cancel = 'local';
    });
    expect(await errors(dir)).to.deep.equal([]);
  });

  it('an id that is not a safe relative path for {upstream_task_id:path} is an error', async () => {
    const dir = vendorsDir();
    const text = editDescriptor(dir, 'acme', (d) => {
      d.routes[0].upstream.poll.path = '/v1beta/{upstream_task_id:path}';
      d.routes[0].upstream.cancel = 'local';
    });
    writeFixture(dir, 'acme', 'generation', 'created', { output: { task_id: `../admin/${ID}`, status: 'QUEUED' } });
    const f = (await errors(dir)).find((x) => x.pointer === '/routes/0/upstream/poll/path')!;
    expect(f.line).to.equal(lineOf(text, 'path: /v1beta/{upstream_task_id:path}'));
    expect(f.message).to.match(/cannot be built from .*created\.json: the task id holds a \.\. segment; the gateway would fail every task at submission/);
  });

  it('a URL the submit answer names on another host is an error at its urls entry; {{base_url}} passes', async () => {
    const dir = vendorsDir();
    const text = editDescriptor(dir, 'acme', (d) => {
      d.routes[0].upstream.submit.urls = { status: 'status_url' };
      d.routes[0].upstream.poll.path = '{url:status}';
    });
    writeFixture(dir, 'acme', 'generation', 'created', { status_url: `https://evil.example/requests/${ID}/status`, output: { task_id: ID, status: 'QUEUED' } });
    const f = (await errors(dir)).find((x) => x.pointer === '/routes/0/upstream/submit/urls/status')!;
    expect(f.line).to.equal(lineOf(text, 'status: status_url'));
    expect(f.message).to.match(/which the gateway refuses: the status URL names another scheme, host or port/);
    writeFixture(dir, 'acme', 'generation', 'created', { status_url: `{{base_url}}/requests/${ID}/status`, output: { task_id: ID, status: 'QUEUED' } });
    expect(await errors(dir)).to.deep.equal([]);
  });

  it('a non-2xx poll answer is an error unless its status maps ($http_status bound)', async () => {
    const dir = vendorsDir();
    const text = editDescriptor(dir, 'acme', () => undefined);
    writeFixture(dir, 'acme', 'generation', 'queued', { $status: 400, $body: { detail: 'Request is still in progress' } });
    let f = (await errors(dir)).find((x) => x.pointer === '/routes/0/upstream/poll/status')!;
    expect(f.line).to.equal(lineOf(text, 'status: output.status'));
    expect(f.message).to.match(/queued\.json answers HTTP 400, and the status expression does not read \$http_status: such a poll counts as failed/);
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].upstream.poll.status = "$http_status = 400 ? 'NOT_READY' : output.status";
    });
    f = (await errors(dir)).find((x) => x.pointer === '/routes/0/upstream/poll/status')!;
    expect(f.message).to.match(/reads "NOT_READY" from .*queued\.json, which status_map does not map .*a poll answered HTTP 400 would count as failed/);
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].upstream.poll.status = "$http_status = 400 ? 'QUEUED' : output.status";
    });
    expect(await errors(dir)).to.deep.equal([]);
  });

  it('a result fetch: result.json is required, a non-2xx one yields no result, a missing field fails unless optional', async () => {
    const dir = vendorsDir();
    let text = editDescriptor(dir, 'acme', (d) => {
      d.routes[0].upstream.result = { path: '/api/v1/generations/{upstream_task_id}/result' };
      d.routes[0].result = { images: 'images.url' };
      d.routes[0].pricing.settle_quantity = '$count($upstream.images)';
    });
    let f = await errors(dir);
    expect(f.map((x) => [x.pointer, x.line, x.message.replace(/ \S+\/fixtures\//, ' …/')])).to.deep.include(['/routes/0', lineOf(text, '- id: generation'), 'no …/generation/result.json']);
    writeFixture(dir, 'acme', 'generation', 'result', { $status: 422, $body: { detail: [{ msg: 'prompt refused' }] } });
    f = await errors(dir);
    const refused = f.find((x) => x.pointer === '/routes/0/upstream/result')!;
    expect(refused.line).to.equal(lineOf(text, 'result:'));
    expect(refused.message).to.match(/result\.json answers HTTP 422: a completed task would fail/);
    writeFixture(dir, 'acme', 'generation', 'result', { images: [{ url: `{{files_url}}/${ID}/0.png` }] });
    expect(await errors(dir)).to.deep.equal([]);
    text = editDescriptor(dir, 'acme', (d) => {
      d.routes[0].result = { images: 'images.url', seed: 'seed' };
    });
    f = await errors(dir);
    expect(f.map((x) => x.pointer)).to.deep.equal(['/routes/0/result/seed']);
    expect(f[0]!.line).to.equal(lineOf(text, 'seed: seed'));
    expect(f[0]!.message).to.match(/reads nothing from .*result\.json: the answer has no seed, so the gateway would fail a completed task with 3003 \(mark a field the provider may leave out \{from, optional: true\}\)/);
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].result = { images: 'images.url', seed: { from: 'seed', optional: true } };
    });
    expect(await errors(dir)).to.deep.equal([]);
  });

  it('an async route without a cancel policy is refused by the meta-schema', async () => {
    const dir = vendorsDir();
    const text = editDescriptor(dir, 'acme', (d) => {
      delete d.routes[0].upstream.cancel;
    });
    const f = (await errors(dir)).filter((x) => x.check === 'meta-schema');
    expect(f.map((x) => [x.pointer, x.message])).to.deep.equal([['/routes/0/upstream', 'missing required field "cancel"']]);
    expect(f[0]!.line).to.equal(lineOf(text, '    upstream:'));
  });

  it('a descriptor of proxied routes with no fixtures at all is an error too', async () => {
    const dir = vendorsDir([{ name: 'acme_chat', style: 'stream' }]);
    rmSync(join(dir, 'acme_chat', 'fixtures'), { recursive: true });
    const f = (await errors(dir)).filter((x) => x.check === 'fixture');
    expect(f.map((x) => [x.pointer, x.message.replace(/ \S+\/fixtures\//, ' …/')])).to.deep.equal([['/routes', 'no fixtures in …/: the sandbox cannot play this descriptor and serve refuses it']]);
    expect(f[0]!.line).to.be.greaterThan(1);
  });

  it('serve refuses what check refuses: a fixture error, and a route with no fixtures', async () => {
    const dir = vendorsDir();
    writeFixture(dir, 'acme', 'generation', 'running', { output: { task_id: ID, status: 'WARMING_UP' } });
    const refusal = await startTestGateway({ vendorsDir: dir }).then(async (gw) => void (await gw.close()), (err: unknown) => err);
    expect(refusal).to.be.instanceOf(LoadError);
    const problems = (refusal as LoadError).problems;
    expect(problems.map((p) => [p.pointer, p.message.replace(/ \S+\/fixtures\//, ' …/')])).to.deep.equal([
      ['/routes/0/upstream/poll/status', 'reads "WARMING_UP" from …/generation/running.json, which status_map does not map (it maps: QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELED): the gateway would fail the task with 3003 [fixture]'],
    ]);
    expect(problems[0]!.line).to.be.greaterThan(1);
    rmSync(join(dir, 'acme', 'fixtures'), { recursive: true });
    const bare = await startTestGateway({ vendorsDir: dir }).then(async (gw) => void (await gw.close()), (err: unknown) => err);
    expect(bare).to.be.instanceOf(LoadError);
    expect((bare as LoadError).problems.map((p) => [p.pointer, p.message.replace(/ \S+\/fixtures\//, ' …/')])).to.deep.equal([
      ['/routes/0', 'no fixtures in …/generation/: the sandbox cannot play this route, its mappings are untested, and serve refuses it [fixture]'],
    ]);
  });
});

// `gateway check`: one bad descriptor per check, each starting from the scaffold (which passes)
// and broken in exactly one way; findings must name the check, the file, the line and the pointer.
import { expect } from 'chai';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { runChecks } from '../../engine/tooling/checks.ts';
import type { Finding } from '../../engine/tooling/findings.ts';
import { cleanTempDirs, cli, editDescriptor, lineOf, vendorsDir, writeFixture } from './support.ts';

async function check(dir: string) {
  return runChecks({ paths: [dir] });
}

function only(findings: Finding[], check: string): Finding[] {
  return findings.filter((f) => f.check === check && f.severity === 'error');
}

describe('gateway check', () => {
  after(cleanTempDirs);

  it('passes the scaffolded descriptors of every style without a finding', async () => {
    const dir = vendorsDir([{ name: 'acme' }, { name: 'acme_sync', style: 'sync' }, { name: 'acme_chat', style: 'stream' }]);
    const report = await check(dir);
    expect(report.findings, JSON.stringify(report.findings, null, 2)).to.deep.equal([]);
    expect(report).to.include({ ok: true, vendors: 3, routes: 3 });
  });

  it('meta-schema: reports file:line:col /pointer message', async () => {
    const dir = vendorsDir();
    const text = editDescriptor(dir, 'acme', (d) => {
      d.routes[0].method = 'PUT';
    });
    const report = await check(dir);
    expect(report.ok).to.equal(false);
    const f = only(report.findings, 'meta-schema');
    expect(f.map((x) => x.pointer)).to.include('/routes/0/method');
    const hit = f.find((x) => x.pointer === '/routes/0/method')!;
    expect(hit.file).to.match(/acme\.yaml$/);
    expect(hit.line).to.equal(lineOf(text, 'method: PUT'));
    expect(hit.col).to.be.greaterThan(1);
  });

  it('route-collision: a route of one vendor answering a path another vendor serves', async () => {
    const dir = vendorsDir([{ name: 'alpha' }, { name: 'beta', style: 'sync' }, { name: 'gamma', style: 'sync' }]);
    const beta = editDescriptor(dir, 'beta', (d) => {
      d.routes[0].aliases = ['/vendors/alpha/v1/generation'];
    });
    editDescriptor(dir, 'gamma', (d) => {
      d.routes[0].aliases = ['/v1/embeddings'];
      d.routes[0].path = '/v1/embed';
    });
    const zeta = join(dir, 'zeta.yaml');
    writeFileSync(zeta, readFileSync(join(dir, 'gamma.yaml'), 'utf8').replace('vendor: gamma', 'vendor: zeta'));
    const f = only((await check(dir)).findings, 'route-collision');
    expect(f.map((x) => x.message)).to.deep.equal([
      'POST /vendors/alpha/v1/generation is already served by alpha/generation (' + f[0]!.message.split('(')[1],
      'POST /v1/embeddings is already served by gamma/embeddings (' + f[1]!.message.split('(')[1],
    ]);
    expect(f[0]!.message).to.match(/alpha\.yaml\)$/);
    expect(f[0]!.file).to.match(/beta\.yaml$/);
    expect(f[0]!.line).to.equal(lineOf(beta, 'aliases:'));
    expect(f[1]!.file).to.match(/zeta\.yaml$/);
  });

  it('an alias on an async route is not served: a warning', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].aliases = ['/v1/generation'];
    });
    const report = await check(dir);
    expect(report.ok).to.equal(true);
    expect(report.findings.map((x) => [x.severity, x.pointer, x.message])).to.deep.equal([
      ['warning', '/routes/0/aliases', "aliases are served for sync and stream routes only: this async route's aliases are ignored"],
    ]);
  });

  it('route-collision: an alias on a path the gateway serves itself', async () => {
    const dir = vendorsDir([{ name: 'acme', style: 'sync' }]);
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].aliases = ['/openapi.json'];
    });
    const f = only((await check(dir)).findings, 'route-collision');
    expect(f.map((x) => x.message).join('\n')).to.match(/alias \/openapi.json takes \/openapi.json/);
  });

  it('ref: a $ref that resolves to nothing, shared or local', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].request.schema.properties.prompt = { $ref: '/schemas/nope.schema.json#/$defs/prompt' };
      d.routes[0].request.schema.properties.seed = { $ref: '#/$defs/seed' };
    });
    const f = only((await check(dir)).findings, 'ref');
    expect(f.map((x) => x.pointer).sort()).to.deep.equal(['/routes/0/request/schema/properties/prompt/$ref', '/routes/0/request/schema/properties/seed/$ref']);
    expect(f.find((x) => x.pointer.includes('prompt'))!.message).to.match(/nope\.schema\.json, which is not a schema the gateway has/);
    expect(f.find((x) => x.pointer.includes('seed'))!.message).to.match(/has nothing at #\/\$defs\/seed/);
  });

  it('ref: a $ref into the shared schemas/ that exists passes', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].request.schema.properties.seed = { $ref: '/schemas/vendor.schema.json#/$defs/expr' };
    });
    expect(only((await check(dir)).findings, 'ref')).to.deep.equal([]);
  });

  it('expression: one that does not compile, with the character position', async () => {
    const dir = vendorsDir();
    const text = editDescriptor(dir, 'acme', (d) => {
      d.routes[0].upstream.submit.body = '{ "input": { "prompt": prompt }';
    });
    const f = only((await check(dir)).findings, 'expression');
    expect(f).to.have.length(1);
    expect(f[0]!.pointer).to.equal('/routes/0/upstream/submit/body');
    expect(f[0]!.message).to.match(/does not compile: .*\(at character \d+\)/);
    expect(f[0]!.line).to.equal(lineOf(text, '{ "input": { "prompt": prompt }'));
  });

  it('expression: one that reads a field the request schema does not have', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].upstream.submit.body = '{ "input": { "prompt": promt }, "parameters": { "size": size } }';
      d.routes[0].pricing.quantity = 'count';
    });
    const f = only((await check(dir)).findings, 'expression').sort((a, b) => a.pointer.localeCompare(b.pointer));
    expect(f.map((x) => x.pointer)).to.deep.equal(['/routes/0/pricing/quantity', '/routes/0/upstream/submit/body']);
    expect(f[0]!.message).to.equal('reads "count", which the request schema does not declare (it declares: prompt, size, n, seed)');
    expect(f[1]!.message).to.equal('reads "promt", which the request schema does not declare (it declares: prompt, size, n, seed)');
  });

  it('expression: an error-map condition that reads outside {stage, http_status, body}', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      d.upstream.errors[0].when = "stage = 'task' and output.code = 'DataInspectionFailed'";
    });
    const f = only((await check(dir)).findings, 'expression');
    expect(f).to.have.length(1);
    expect(f[0]!.pointer).to.equal('/upstream/errors/0/when');
    expect(f[0]!.message).to.match(/reads "output.code", but an error-map expression sees only stage, http_status, body/);
  });

  it('status-map: a map that leaves "failed" unreachable', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      delete d.routes[0].upstream.poll.status_map.FAILED;
      delete d.routes[0].upstream.poll.status_map.CANCELED;
    });
    const f = only((await check(dir)).findings, 'status-map');
    expect(f).to.have.length(1);
    expect(f[0]!.pointer).to.equal('/routes/0/upstream/poll/status_map');
    expect(f[0]!.message).to.match(/no upstream status maps onto "failed"/);
  });

  it('status-map: a map without "processing" is only a warning', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].upstream.poll.status_map.RUNNING = 'pending';
    });
    const report = await check(dir);
    expect(report.ok).to.equal(false); // running.json now maps onto the wrong state: a fixture error
    const w = report.findings.filter((x) => x.check === 'status-map');
    expect(w.map((x) => x.severity)).to.deep.equal(['warning']);
    expect(only(report.findings, 'fixture')[0]!.message).to.match(/running\.json is the sandbox's running answer, but its status "RUNNING" maps onto "pending", not "processing"/);
  });

  it('example: a request example the route itself refuses', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].request.examples.push({ prompt: 'x', n: 9 });
    });
    const f = only((await check(dir)).findings, 'example');
    expect(f).to.have.length(1);
    expect(f[0]!.pointer).to.equal('/routes/0/request/examples/2');
    expect(f[0]!.message).to.match(/refuses this example \(2003\): n must be <= 4 \(at \/n\)/);
  });

  it('pricing: a price that cannot be evaluated on the route\'s examples', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].pricing.unit_price.by = "size & '@2x'";
    });
    const f = only((await check(dir)).findings, 'pricing');
    expect(f).to.have.length(2); // both examples
    expect(f[0]!.pointer).to.equal('/routes/0/pricing');
    expect(f[0]!.message).to.match(/cannot price the example at \/routes\/0\/request\/examples\/0: .*"1024\*1024@2x", which is not in the price table/);
  });

  it('pricing: a price that is not a decimal string is caught at its pointer (the meta-schema holds the pricing schema)', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].pricing.unit_price.table['1024*1024'] = '0,04';
    });
    const report = await check(dir);
    expect(report.ok).to.equal(false);
    const pointers = report.findings.filter((x) => x.severity === 'error').map((x) => x.pointer);
    expect(pointers).to.include('/routes/0/pricing/unit_price/table/1024*1024');
  });

  it('pricing: settle_quantity that cannot be read from the succeeded fixture', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].pricing.settle_quantity = '$result.images';
    });
    const f = only((await check(dir)).findings, 'pricing');
    expect(f.map((x) => x.pointer)).to.include('/routes/0/pricing/settle_quantity');
    expect(f[0]!.message).to.match(/cannot settle the example .* not a non-negative integer/);
  });

  it('fixture: a created answer the task_id mapping cannot read', async () => {
    const dir = vendorsDir();
    writeFixture(dir, 'acme', 'generation', 'created', { request_id: 'r', output: { id: '{{upstream_task_id}}' } });
    const f = only((await check(dir)).findings, 'fixture');
    expect(f).to.have.length(1);
    expect(f[0]!.pointer).to.equal('/routes/0/upstream/submit/task_id');
    expect(f[0]!.message).to.match(/reads nothing from .*acme\/fixtures\/generation\/created\.json, not a task id/);
  });

  it('fixture: a poll answer whose status the map does not know, and a succeeded answer without results', async () => {
    const dir = vendorsDir();
    writeFixture(dir, 'acme', 'generation', 'running', { output: { task_id: '{{upstream_task_id}}', status: 'WORKING' } });
    writeFixture(dir, 'acme', 'generation', 'succeeded', { output: { task_id: '{{upstream_task_id}}', status: 'SUCCEEDED', results: [] } });
    const f = only((await check(dir)).findings, 'fixture');
    const msgs = f.map((x) => `${x.pointer} ${x.message}`);
    expect(msgs.some((m) => /^\/routes\/0\/upstream\/poll\/status reads "WORKING" from .*running\.json, which status_map does not map/.test(m)), msgs.join('\n')).to.equal(true);
    expect(msgs.some((m) => /^\/routes\/0\/result\/images reads nothing from .*succeeded\.json/.test(m)), msgs.join('\n')).to.equal(true);
  });

  it('fixture: a route with no fixtures at all', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].id = 'render';
    });
    const report = await check(dir);
    const f = only(report.findings, 'fixture');
    expect(f[0]!.message).to.match(/no fixtures in .*acme\/fixtures\/render\/: the sandbox cannot play this route/);
    expect(report.findings.some((x) => x.severity === 'warning' && /fixtures for route "generation", which this descriptor does not have/.test(x.message))).to.equal(true);
  });

  it('upstream cancel: it must name the task; its body reads declared fields; the sandbox wants cancelled.json', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].upstream.poll.status_map.CANCELED = 'failed';
      d.routes[0].upstream.cancel = { path: '/api/v1/cancel' };
    });
    rmSync(join(dir, 'acme/fixtures/generation/cancelled.json'));
    let report = await check(dir);
    expect(only(report.findings, 'engine').map((x) => [x.pointer, x.message])).to.deep.equal([
      ['/routes/0/upstream/cancel', 'the cancel request must name the task: a placeholder in its path, or $upstream_task_id in its body'],
    ]);
    expect(report.findings.filter((x) => x.severity === 'warning').map((x) => x.message)).to.deep.equal([
      `no ${relative(process.cwd(), join(dir, 'acme/fixtures/generation'))}/cancelled.json: after a cancel the sandbox plays failed.json`,
    ]);
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].upstream.cancel = { path: '/api/v1/cancel', body: '{ "task_id": $upstream_task_id, "reason": reson }' };
    });
    report = await check(dir);
    expect(only(report.findings, 'expression').map((x) => [x.pointer, x.message.split(' (')[0]])).to.deep.equal([['/routes/0/upstream/cancel/body', 'reads "reson", which the request schema does not declare']]);
    editDescriptor(dir, 'acme', (d) => {
      d.routes[0].upstream.cancel = { path: '/api/v1/tasks/cancel', body: '{ "task_id": $upstream_task_id }' };
    });
    writeFixture(dir, 'acme', 'generation', 'cancelled', { output: { task_id: '{{upstream_task_id}}', status: 'CANCELED' } });
    report = await check(dir);
    expect(report.findings, JSON.stringify(report.findings)).to.deep.equal([]);
  });

  it('engine: what only the engine compiler refuses is reported too (a status route reading an unknown route)', async () => {
    const dir = vendorsDir();
    editDescriptor(dir, 'acme', (d) => {
      d.routes.push({ id: 'status', kind: 'status', method: 'GET', path: '/v1/tasks', tasks_of: ['nope'] });
    });
    const f = only((await check(dir)).findings, 'engine');
    expect(f.map((x) => [x.pointer, x.message])).to.deep.equal([['/routes/1/tasks_of/0', 'no async route "nope" in this descriptor']]);
  });

  it('config: a config that does not validate is reported with its position', async () => {
    const dir = vendorsDir();
    const config = join(dir, 'config.yaml');
    writeFileSync(config, 'server:\n  port: eighty\nsandbox: { enabled: true, demo_api_key: gw_test_check_000000000000 }\n');
    const report = await runChecks({ config, paths: [dir] });
    const f = only(report.findings, 'config');
    expect(f).to.have.length(1);
    expect(f[0]).to.include({ pointer: '/server/port', line: 2 });
    expect(f[0]!.message).to.match(/must be integer/);
  });

  it('config: an admin token under 24 characters or a documented example value is a warning', async () => {
    const dir = vendorsDir();
    const config = join(dir, 'config.yaml');
    const sandbox = `sandbox: { enabled: true, demo_api_key: gw_test_check_000000000000 }\nvendors: { dir: ${JSON.stringify(dir)}, enabled: [acme] }\n`;
    const warningsFor = async (token: string, env: Record<string, string> = {}) => {
      writeFileSync(config, `${sandbox}admin: { token: ${JSON.stringify(token)} }\n`);
      const report = await runChecks({ config, paths: [dir], env });
      return report.findings.filter((x) => x.check === 'config').map((x) => [x.severity, x.pointer, x.message.split(':')[0]]);
    };
    expect(await warningsFor('change-me')).to.deep.equal([['warning', '/admin/token', 'the admin token is an example value from the documentation ("change-me")']]);
    expect(await warningsFor('short-token-123')).to.deep.equal([['warning', '/admin/token', 'the admin token is 15 characters long, under 24']]);
    expect(await warningsFor('Vq3xP0m9Lr7TzK2wYb8NcD5a')).to.deep.equal([]);
    expect(await warningsFor('')).to.deep.equal([]); // no token: the admin API is closed
    // GATEWAY_ADMIN_TOKEN replaces the file's value, and is what is judged.
    expect(await warningsFor('Vq3xP0m9Lr7TzK2wYb8NcD5a', { GATEWAY_ADMIN_TOKEN: 'changeme' })).to.have.length(1);
  });

  it('a fixture path stands for its descriptor', async () => {
    const dir = vendorsDir();
    const report = await runChecks({ paths: [join(dir, 'acme/fixtures/generation/created.json')] });
    expect(report).to.include({ ok: true, vendors: 1 });
  });

  describe('CLI', () => {
    it('exits 1 with --format json for CI, and 0 on a clean folder', () => {
      const dir = vendorsDir();
      expect(cli(['check', dir]).status).to.equal(0);
      editDescriptor(dir, 'acme', (d) => {
        delete d.routes[0].upstream.poll.status_map.SUCCEEDED;
      });
      const r = cli(['check', dir, '--format', 'json']);
      expect(r.status).to.equal(1);
      const out = JSON.parse(r.stdout);
      expect(out.ok).to.equal(false);
      const f = out.findings.find((x: Finding) => x.check === 'status-map');
      expect(f).to.include({ pointer: '/routes/0/upstream/poll/status_map', severity: 'error' });
      expect(f.line).to.be.a('number');
    });

    it('prints file:line:col  /pointer  message, meta-schema first, and GitHub annotations with --format github', () => {
      const dir = vendorsDir([{ name: 'acme' }, { name: 'zeta' }]);
      editDescriptor(dir, 'acme', (d) => {
        d.routes[0].upstream.poll.status_map = { QUEUED: 'pending', RUNNING: 'processing', SUCCEEDED: 'completed' };
      });
      const zeta = editDescriptor(dir, 'zeta', (d) => {
        d.routes[0].kind = 'later';
      });
      const r = cli(['check', dir]);
      expect(r.status).to.equal(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines[0]).to.match(new RegExp(`zeta\\.yaml:${lineOf(zeta, 'kind: later')}:\\d+  /routes/0/kind  must be one of .*\\[meta-schema\\]$`));
      expect(lines.some((l) => /acme\.yaml:\d+:\d+  \/routes\/0\/upstream\/poll\/status_map  no upstream status maps onto "failed".*\[status-map\]$/.test(l))).to.equal(true);
      expect(lines.at(-1)).to.match(/^check failed: \d+ error\(s\)/);
      const gh = cli(['check', dir, '--format', 'github']);
      expect(gh.stderr).to.match(/^::error file=.*zeta\.yaml,line=\d+,col=\d+,title=gateway check%3A meta-schema::\/routes\/0\/kind /m);
    });

    it('the shipped repository passes its own strict check (no error, no warning)', () => {
      const r = cli(['check', '--strict']);
      expect(r.status, r.stdout + r.stderr).to.equal(0);
      expect(r.stdout).to.match(/^ok: 0 error\(s\), 0 warning\(s\)/m);
    });

    it('checks the repository config and its vendors by default', () => {
      const r = cli(['check', '--format', 'json']);
      const out = JSON.parse(r.stdout);
      expect(out.vendors).to.be.greaterThan(0);
      expect(out.files.every((f: string) => f.startsWith('vendors/'))).to.equal(true);
    });
  });
});

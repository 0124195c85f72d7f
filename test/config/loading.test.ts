// Loading: every problem in config.yaml or a descriptor is reported as
// `file:line:col  /pointer  message`, and an invalid file stops start-up with a non-zero exit.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadConfigText, loadConfigFile } from '../../engine/load-config.ts';
import { runChecks } from '../../engine/tooling/checks.ts';
import { formatProblem, LoadError } from '../../engine/config/yaml-source.ts';
import { compileVendors } from '../../engine/descriptors/compile.ts';
import { loadVendorDir } from '../../engine/descriptors/load-descriptors.ts';
import { createUpstreamAgent } from '../../engine/upstream/client.ts';
import { createAjv } from '../../engine/validation/ajv.ts';
import { systemClock } from '../../engine/util/clock.ts';
import { ROOT } from '../helpers/gateway.ts';

const run = promisify(execFile);
const VALID = readFileSync(join(ROOT, 'vendors/provider_b.yaml'), 'utf8');

/** Load (and compile) one descriptor text as vendors/provider_b.yaml; returns the report lines. */
function problemsOf(text: string, name = 'provider_b'): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'gw-desc-'));
  writeFileSync(join(dir, `${name}.yaml`), text);
  const ajv = createAjv({ useDefaults: true });
  const config = loadConfigText(`server: {}\nstore: {}\nsandbox: { enabled: true, demo_api_key: xxxxxxxxxxxxxxxxxxxx }\nvendors: { dir: ${JSON.stringify(dir)}, enabled: [${name}] }`, dir, { env: {} });
  const dispatcher = createUpstreamAgent();
  try {
    compileVendors(loadVendorDir(dir, ajv, [name]), { ajv, config, clock: systemClock, dispatcher, baseUrlFor: () => 'http://127.0.0.1:9' });
    return [];
  } catch (err) {
    if (!(err instanceof LoadError)) throw err;
    return err.problems.map((p) => formatProblem({ ...p, file: p.file.replace(/^.*\//, '') }));
  } finally {
    void dispatcher.close();
  }
}

describe('descriptor loading reports file:line:col /pointer message', () => {
  it('accepts the shipped descriptor', () => {
    expect(problemsOf(VALID)).to.deep.equal([]);
  });

  it('a wrong type', () => {
    const text = VALID.replace('    status: 202\n    model_name: diffusion', '    status: "fast"\n    model_name: diffusion');
    const line = text.split('\n').findIndex((l) => l.includes('status: "fast"')) + 1;
    expect(problemsOf(text)).to.include(`provider_b.yaml:${line}:5  /routes/0/status  must be integer`);
  });

  it('an unknown field', () => {
    const text = VALID.replace('    model_name: diffusion\n', '    model_name: diffusion\n    modle: typo\n');
    const line = text.split('\n').findIndex((l) => l.includes('modle: typo')) + 1;
    expect(problemsOf(text)).to.deep.equal([`provider_b.yaml:${line}:5  /routes/0/modle  unknown field "modle"`]);
  });

  it('a missing required field', () => {
    const text = VALID.replace('        task_id: result\n        accept: code = 1 or code = 22\n        error_message: description\n      poll:\n        path: /mj/task/{upstream_task_id}/fetch\n        interval_ms: 2000', '        accept: code = 1 or code = 22\n        error_message: description\n      poll:\n        path: /mj/task/{upstream_task_id}/fetch\n        interval_ms: 2000');
    const line = text.split('\n').findIndex((l) => l.includes('submit:')) + 1;
    expect(problemsOf(text)).to.deep.equal([`provider_b.yaml:${line}:7  /routes/0/upstream/submit  missing required field "task_id"`]);
  });

  it('a $ref that does not resolve', () => {
    const text = VALID.replace('          prompt:\n            type: string\n            minLength: 1\n            maxLength: 8192\n            description: Third', '          prompt:\n            $ref: /schemas/nope.schema.json#/$defs/prompt\n            description: Third');
    const problems = problemsOf(text);
    expect(problems).to.have.length(1);
    const line = text.split('\n').findIndex((l) => l.trim() === 'schema:') + 1;
    expect(problems[0]).to.match(new RegExp(`^provider_b\\.yaml:${line}:7  /routes/0/request/schema  request schema does not compile: can't resolve reference /schemas/nope\\.schema\\.json`));
  });

  it('an expression that does not compile', () => {
    const text = VALID.replace("body: '{ \"prompt\": prompt, \"base64Array\": [] }'", "body: '{ \"prompt\": prompt, '");
    const line = text.split('\n').findIndex((l) => l.includes(`body: '{ "prompt": prompt, '`)) + 1;
    const problems = problemsOf(text);
    expect(problems).to.have.length(1);
    expect(problems[0]).to.match(new RegExp(`^provider_b\\.yaml:${line}:9  /routes/0/upstream/submit/body  expression does not compile: `));
  });

  it('a YAML syntax error, a foreign format version, and a vendor name that is not the file name', () => {
    expect(problemsOf('format: 1\nvendor: [unclosed\n')[0]).to.match(/^provider_b\.yaml:\d+:\d+  \/  /);
    expect(problemsOf(VALID.replace('format: 1', 'format: 2'))).to.deep.equal([`provider_b.yaml:${VALID.split('\n').findIndex((l) => l === 'format: 1') + 1}:1  /format  descriptor format 2 is not supported by this engine (supported: 1)`]);
    expect(problemsOf(VALID, 'other')[0]).to.match(/^other\.yaml:\d+:1  \/vendor  vendor "provider_b" must match the file name "other"$/);
  });

  it('reports every problem of every file in one run', () => {
    const text = VALID.replace('    model_name: diffusion\n', '    model_name: diffusion\n    modle: typo\n').replace('    status: 202\n    model_name: video-diffusion', '    status: 299\n    model_name: video-diffusion');
    expect(problemsOf(text)).to.have.length(2);
  });
});

describe('config loading', () => {
  it('interpolates ${VAR} and ${VAR:-default} and coerces to the schema types', () => {
    const c = loadConfigText('server: { port: "${P:-9000}", host: "${H}" }\nstore: {}\nsandbox: { enabled: false }\n', ROOT, { env: { H: '::1' } });
    expect(c.server.port).to.equal(9000);
    expect(c.server.host).to.equal('::1');
    expect(c.store.kind).to.equal('memory');
  });

  it('a missing variable without default is a positioned problem', () => {
    try {
      loadConfigText('server:\n  host: ${NOPE_NOT_SET}\nstore: {}\nsandbox: {}\n', ROOT, { env: {} });
      expect.fail('should throw');
    } catch (err) {
      expect(formatProblem((err as LoadError).problems[0]!)).to.equal('<config>:2:9  /server/host  environment variable NOPE_NOT_SET is not set (write ${NOPE_NOT_SET:-default} to give a default)');
    }
  });

  it('schema errors are positioned', () => {
    try {
      loadConfigText('server:\n  port: 99999\nstore:\n  kind: mongo\nsandbox: {}\nbogus: 1\n', ROOT, { env: {} });
      expect.fail('should throw');
    } catch (err) {
      const lines = (err as LoadError).problems.map(formatProblem);
      expect(lines).to.include('<config>:2:3  /server/port  must be <= 65535');
      expect(lines).to.include('<config>:4:3  /store/kind  must be one of ["memory","redis"]');
      expect(lines).to.include('<config>:6:1  /bogus  unknown field "bogus"');
    }
  });

  it('store.redis_cluster_nodes: a list of redis:// URLs', () => {
    const c = loadConfigText('store: { kind: redis, redis_cluster_nodes: ["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"] }\nsandbox: {}\n', ROOT, { env: {} });
    expect(c.store.redis_cluster_nodes).to.deep.equal(['redis://10.0.0.1:7000', 'redis://10.0.0.2:7000']);
    expect(loadConfigText('store: {}\nsandbox: {}\n', ROOT, { env: {} }).store.redis_cluster_nodes).to.equal(undefined);
    for (const bad of ['["10.0.0.1:7000"]', '[]', '"redis://10.0.0.1:7000"', '["redis://10.0.0.1:7000/3"]']) {
      expect(() => loadConfigText(`store: { redis_cluster_nodes: ${bad} }\nsandbox: {}\n`, ROOT, { env: {} }), bad).to.throw(LoadError, /\/store\/redis_cluster_nodes/);
    }
  });

  it('PORT overrides the listen port', () => {
    const c = loadConfigText('server: { port: 1234 }\nstore: {}\nsandbox: {}\n', ROOT, { env: { PORT: '4321' } });
    expect(c.server.port).to.equal(4321);
    expect(() => loadConfigText('server: {}\nstore: {}\nsandbox: {}\n', ROOT, { env: { PORT: 'eighty' } })).to.throw(LoadError, /PORT=eighty/);
  });

  it('the shipped config.yaml and config.production.yaml load', () => {
    const dev = loadConfigFile(join(ROOT, 'config.yaml'), { env: {} });
    expect(dev.sandbox.enabled).to.equal(true);
    expect(dev.store.kind).to.equal('memory');
    expect(dev.store.task_retention_hours).to.equal(168);
    expect(loadConfigText('server: {}\nstore: {}\nsandbox: {}\n', ROOT, { env: {} }).store.task_retention_hours, 'the default').to.equal(168);
    expect(() => loadConfigText('server: {}\nstore: { task_retention_hours: -1 }\nsandbox: {}\n', ROOT, { env: {} })).to.throw(LoadError, /task_retention_hours/);
    const upstreamEnv = Object.fromEntries(['A', 'B', 'C', 'D', 'E', 'F'].flatMap((v) => [`BASE_URL`, `API_KEY`, `ACCESS_KEY`, `SECRET_KEY`].map((k) => [`PROVIDER_${v}_${k}`, k === 'BASE_URL' ? `https://${v.toLowerCase()}.example.com` : 'k'])));
    const prod = loadConfigFile(join(ROOT, 'config.production.yaml'), { env: { REDIS_URL: 'redis://r:6379', GATEWAY_ADMIN_TOKEN: 't', ...upstreamEnv } });
    const standIns = ['provider_a', 'provider_b', 'provider_c', 'provider_d', 'provider_e', 'provider_f'];
    expect(dev.vendors.enabled, 'the catalogue ships disabled').to.deep.equal(standIns);
    expect(prod.vendors.enabled).to.deep.equal(standIns);
    for (const v of standIns) expect(prod.upstreams[v]?.base_url, v).to.be.a('string');
    expect(prod.sandbox.enabled).to.equal(false);
    expect(prod.upstreams.provider_b!.credentials!.api_key).to.equal('k');
    expect(() => loadConfigFile(join(ROOT, 'config.production.yaml'), { env: {} })).to.throw(LoadError, /REDIS_URL is not set/);
  });
});

describe('an invalid file stops start-up with the report and a non-zero exit', () => {
  it('gateway serve / gateway check exit 1 and print file:line:col lines', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-bad-'));
    mkdirSync(join(dir, 'vendors'));
    writeFileSync(join(dir, 'vendors', 'provider_b.yaml'), VALID.replace('    model_name: diffusion\n', '    model_name: diffusion\n    modle: typo\n'));
    writeFileSync(join(dir, 'config.yaml'), 'server: { port: 0 }\nstore: {}\nsandbox: { enabled: true, demo_api_key: xxxxxxxxxxxxxxxxxxxx }\nlog: { level: silent }\nvendors: { dir: vendors, enabled: [provider_b] }\n');
    for (const cmd of ['serve', 'check']) {
      const r = await run(process.execPath, [join(ROOT, 'engine/cli/main.ts'), cmd, '--config', join(dir, 'config.yaml')]).catch((e) => e);
      expect(r.code, cmd).to.equal(1);
      expect(r.stderr).to.match(/vendors\/provider_b\.yaml:\d+:5 {2}\/routes\/0\/modle {2}unknown field "modle"/);
    }
  });
});

describe('gateway check and gateway serve refuse the same configs, with positions', () => {
  // Values the config schema lets through but the engine cannot use. Each row: the YAML that
  // holds it, and the pointer and message both commands must report at the value's line.
  const BASE = `server: { port: 0 }\nstore: {}\nsandbox: { enabled: true, demo_api_key: xxxxxxxxxxxxxxxxxxxx }\nlog: { level: silent }\nvendors: { dir: ${JSON.stringify(join(ROOT, 'vendors'))}, enabled: [provider_b] }\n`;
  const rows: Array<{ name: string; yaml: string; at: string; pointer: string; message: RegExp }> = [
    { name: 'a CIDR with a /33 prefix', yaml: 'webhooks:\n  allow_private_cidrs: ["10.0.0.0/8", "127.0.0.0/33"]\n', at: '127.0.0.0/33', pointer: '/webhooks/allow_private_cidrs/1', message: /^not a CIDR: 127\.0\.0\.0\/33$/ },
    { name: 'a CA file that does not exist', yaml: 'webhooks:\n  ca_pem: [/no/such/ca.pem]\n', at: 'ca_pem', pointer: '/webhooks/ca_pem/0', message: /^cannot read CA file \/no\/such\/ca\.pem$/ },
    { name: 'a negative low-balance threshold', yaml: 'billing:\n  low_balance: { threshold_credits: -5 }\n', at: 'threshold_credits', pointer: '/billing/low_balance/threshold_credits', message: /^must not be negative$/ },
    { name: 'credits per USD beyond the safe integers', yaml: 'billing:\n  credits_per_usd: 1e300\n', at: 'credits_per_usd', pointer: '/billing/credits_per_usd', message: /^must be a positive integer/ },
    { name: 'a daily spend with a fraction of a milli-credit, as a number', yaml: 'limits:\n  daily_spend_credits: 2.5\n', at: 'daily_spend_credits', pointer: '/limits/daily_spend_credits', message: /must be an integer or a decimal string/ },
    { name: 'a per-model rate beyond the safe integers', yaml: 'limits:\n  models:\n    provider_b/image_generation: { per_minute: 1e300 }\n', at: 'per_minute', pointer: '/limits/models/provider_b~1image_generation/per_minute', message: /^must be a positive integer or null/ },
    { name: 'sandbox demo credits beyond the money range', yaml: 'sandbox_credits', at: 'demo_credits', pointer: '/sandbox/demo_credits', message: /outside the safe integer range/ },
    { name: 'cluster nodes with different credentials', yaml: 'cluster_creds', at: 'redis_cluster_nodes', pointer: '/store/redis_cluster_nodes/1', message: /^every cluster node needs the same scheme and credentials as the first$/ },
    { name: 'a tracing endpoint that is not OTLP/HTTP', yaml: 'tracing:\n  enabled: true\n  otlp_endpoint: "grpc://127.0.0.1:4317"\n', at: 'otlp_endpoint', pointer: '/tracing/otlp_endpoint', message: /^an OTLP\/HTTP endpoint is http: or https:, not grpc:$/ },
    { name: 'an enabled vendor without a descriptor', yaml: 'vendors_enabled', at: 'replicat', pointer: '/vendors/enabled/1', message: /^no descriptor replicat\.yaml in .*\/vendors \(there: .*provider_a, .*provider_f.*\)$/ },
    { name: 'a vendors folder that does not exist', yaml: 'vendors_dir', at: 'vendors:', pointer: '/vendors/dir', message: /^no such folder: .*\/no-such-vendors$/ },
  ];
  const textOf = (yaml: string) =>
    yaml === 'sandbox_credits' ? BASE.replace('demo_api_key: xxxxxxxxxxxxxxxxxxxx', 'demo_api_key: xxxxxxxxxxxxxxxxxxxx, demo_credits: "99999999999999999999"')
      : yaml === 'vendors_dir' ? BASE.replace(/dir: "[^"]*"/, 'dir: no-such-vendors')
      : yaml === 'vendors_enabled' ? BASE.replace('enabled: [provider_b]', 'enabled: [provider_b, replicat]')
      : yaml === 'cluster_creds' ? BASE.replace('store: {}', 'store:\n  redis_cluster_nodes: ["redis://:one@10.0.0.1:7000", "redis://:two@10.0.0.2:7000"]')
        : BASE + yaml;
  const write = (text: string) => {
    const file = join(mkdtempSync(join(tmpdir(), 'gw-cfg-')), 'config.yaml');
    writeFileSync(file, text);
    return file;
  };
  const lineOf = (text: string, needle: string) => text.split('\n').findIndex((l) => l.includes(needle)) + 1;

  for (const row of rows) {
    it(`${row.name}: check reports it, serve's loader refuses it, at the same file:line:col`, async () => {
      const text = textOf(row.yaml);
      const file = write(text);
      const report = await runChecks({ config: file });
      expect(report.ok, JSON.stringify(report.findings)).to.equal(false);
      const found = report.findings.map((f) => ({ line: f.line, col: f.col, pointer: f.pointer, message: f.message, severity: f.severity }));
      expect(found).to.have.length(1);
      expect(found[0]).to.include({ line: lineOf(text, row.at), pointer: row.pointer, severity: 'error' });
      expect(found[0]!.message).to.match(row.message);
      let problems: string[] = [];
      try {
        loadConfigFile(file, { env: {} });
      } catch (err) {
        if (!(err instanceof LoadError)) throw err;
        problems = err.problems.map(formatProblem);
      }
      expect(problems).to.deep.equal([formatProblem({ file: report.findings[0]!.file, ...found[0]! })]);
    });
  }

  it('the CLI: check and serve both exit 1 and print the same file:line:col lines', async () => {
    const file = write(merge(rows.slice(0, 6).map((r) => r.yaml)));
    const [check, serve] = await Promise.all(['check', 'serve'].map((cmd) => run(process.execPath, [join(ROOT, 'engine/cli/main.ts'), cmd, '--config', file]).catch((e) => e)));
    expect([check.code, serve.code]).to.deep.equal([1, 1]);
    const lines = (out: string) => out.split('\n').filter((l) => /config\.yaml:\d+:\d+ {2}\//.test(l)).map((l) => l.replace(/ {2}\[config\]$/, ''));
    expect(lines(check.stderr)).to.have.length(6);
    expect(lines(serve.stderr)).to.deep.equal(lines(check.stderr));
    expect(serve.stderr).to.match(/gateway: 6 problem\(s\); not started/);
  });

  /** One config holding the rows' sections (each section's entries under one key). */
  function merge(yamls: string[]): string {
    const sections = new Map<string, string[]>();
    for (const y of yamls) {
      const [head, ...body] = y.trimEnd().split('\n');
      sections.set(head!, [...(sections.get(head!) ?? []), ...body]);
    }
    return BASE + [...sections].map(([head, body]) => `${head}\n${body.join('\n')}\n`).join('');
  }
});

describe('vendors.enabled: the one list that says which descriptors are served', () => {
  /** A folder with provider_b and a second descriptor that would stop start-up if it were read. */
  function folder(): string {
    const dir = mkdtempSync(join(tmpdir(), 'gw-enabled-'));
    mkdirSync(join(dir, 'vendors'));
    writeFileSync(join(dir, 'vendors', 'provider_b.yaml'), VALID);
    cpSync(join(ROOT, 'vendors', 'provider_b'), join(dir, 'vendors', 'provider_b'), { recursive: true });
    writeFileSync(join(dir, 'vendors', 'broken.yaml'), 'format: 1\nvendor: broken\nroutes: oops\n');
    return dir;
  }
  const configText = (enabled: string) => `server: { port: 0 }\nstore: {}\nsandbox: { enabled: true, demo_api_key: xxxxxxxxxxxxxxxxxxxx }\nlog: { level: silent }\nvendors: { dir: vendors, enabled: ${enabled} }\n`;

  it('a descriptor not listed is not read: serve starts without it, check still reports it', async () => {
    const dir = folder();
    const config = loadConfigText(configText('[provider_b]'), dir, { env: {} });
    expect(loadVendorDir(config.vendors.dir, createAjv({ useDefaults: true }), config.vendors.enabled).map((v) => v.descriptor.vendor)).to.deep.equal(['provider_b']);
    writeFileSync(join(dir, 'config.yaml'), configText('[provider_b]'));
    const report = await runChecks({ config: join(dir, 'config.yaml') });
    expect(report.findings.map((f) => f.file)).to.satisfy((files: string[]) => files.length > 0 && files.every((f) => f.endsWith('broken.yaml')));
  });

  it('listed, it is read and its problems stop start-up; an empty list serves nothing', () => {
    const dir = folder();
    const listed = loadConfigText(configText('[provider_b, broken]'), dir, { env: {} });
    expect(() => loadVendorDir(listed.vendors.dir, createAjv({ useDefaults: true }), listed.vendors.enabled)).to.throw(LoadError, /routes/);
    const none = loadConfigText(configText('[]'), dir, { env: {} });
    expect(loadVendorDir(none.vendors.dir, createAjv({ useDefaults: true }), none.vendors.enabled)).to.deep.equal([]);
    expect(loadConfigText('sandbox: {}\n', ROOT, { env: {} }).vendors.enabled, 'the default').to.deep.equal([]);
  });

  it('a name twice, or not a vendor name, is refused with its position', () => {
    expect(() => loadConfigText(configText('[provider_b, provider_b]'), folder(), { env: {} })).to.throw(LoadError, /\/vendors\/enabled/);
    expect(() => loadConfigText(configText('["../etc/passwd"]'), folder(), { env: {} })).to.throw(LoadError, /\/vendors\/enabled\/0/);
  });
});

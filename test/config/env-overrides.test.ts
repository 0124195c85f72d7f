// The documented environment overrides (docs/configuration.md) apply to any config file, not only
// through a `${VAR}` in the file: an operator's own file that names none of
// them still takes METRICS_PORT, PORT and the rest from the environment.
import { expect } from 'chai';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENV_OVERRIDES } from '../../engine/config/env-overrides.ts';
import { loadConfigFile, loadConfigText } from '../../engine/load-config.ts';
import { formatProblem, LoadError } from '../../engine/config/yaml-source.ts';
import { ROOT } from '../helpers/gateway.ts';
import { freePort } from '../helpers/net.ts';
import { spawnGateway, type GatewayProcess } from '../redis/support.ts';

/** An operator's own config: literal values, no `${VAR}` anywhere. */
const OWN = `server: { host: 127.0.0.1, port: 8080, shutdown_grace_ms: 1000 }
metrics: { host: 127.0.0.1, port: 9464 }
store: { kind: memory, redis_url: "redis://10.0.0.1:6379", key_prefix: own, task_retention_hours: 24 }
sandbox: { enabled: true, demo_api_key: own_demo_key_0000000000 }
admin: { token: from-the-file }
log: { level: warn }
vendors: { dir: ${JSON.stringify(join(ROOT, 'vendors'))} }
`;

function ownFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'gw-own-')), 'gateway.yaml');
  writeFileSync(file, OWN);
  return file;
}

describe('environment overrides with any config file', () => {
  it('every documented variable replaces the file\'s value', () => {
    const c = loadConfigFile(ownFile(), {
      env: {
        HOST: '::1', PORT: '8181', METRICS_HOST: '0.0.0.0', METRICS_PORT: '9465', GATEWAY_STORE: 'redis', REDIS_URL: 'redis://127.0.0.1:6390',
        REDIS_KEY_PREFIX: 'gw2', TASK_RETENTION_HOURS: '48', GATEWAY_ADMIN_TOKEN: 'from-the-env', GATEWAY_DEMO_API_KEY: 'env_demo_key_000000000000', LOG_LEVEL: 'debug',
      },
    });
    expect(c.server).to.include({ host: '::1', port: 8181 });
    expect(c.metrics).to.include({ host: '0.0.0.0', port: 9465 });
    expect(c.store).to.include({ kind: 'redis', redis_url: 'redis://127.0.0.1:6390', key_prefix: 'gw2', task_retention_hours: 48 });
    expect(c.admin.token).to.equal('from-the-env');
    expect(c.sandbox.demo_api_key).to.equal('env_demo_key_000000000000');
    expect(c.log.level).to.equal('debug');
  });

  it('unset or empty variables leave the file alone', () => {
    const c = loadConfigFile(ownFile(), { env: { METRICS_PORT: '', PORT: undefined } });
    expect(c.server.port).to.equal(8080);
    expect(c.metrics.port).to.equal(9464);
    expect(c.admin.token).to.equal('from-the-file');
  });

  it('a bad value is reported as the variable, never with a secret\'s value', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfigFile(ownFile(), { env });
      } catch (err) {
        if (err instanceof LoadError) return err.problems.map(formatProblem);
        throw err;
      }
      return [];
    };
    expect(problems({ METRICS_PORT: 'ninety' })).to.deep.equal(['env:0:0  /metrics/port  METRICS_PORT=ninety: must be integer,null']);
    expect(problems({ PORT: '70000' })).to.deep.equal(['env:0:0  /server/port  PORT=70000: must be <= 65535']);
    expect(problems({ GATEWAY_STORE: 'mongo' })).to.deep.equal(['env:0:0  /store/kind  GATEWAY_STORE=mongo: must be one of ["memory","redis"]']);
    expect(problems({ GATEWAY_DEMO_API_KEY: 'short-secret' })).to.deep.equal(['env:0:0  /sandbox/demo_api_key  GATEWAY_DEMO_API_KEY (from the environment): must NOT have fewer than 16 characters']);
  });

  it('the shipped config files read each overridden variable one way only: the override', () => {
    // A `${VAR:-default}` of an overridden variable would be a second reading of it; the files
    // give the plain default instead. `${VAR}` (no default) stays where it makes the variable
    // required: config.production.yaml has no Redis URL or admin token of its own.
    const names = ENV_OVERRIDES.map((o) => o.name);
    for (const file of ['config.yaml', 'config.production.yaml']) {
      const code = readFileSync(join(ROOT, file), 'utf8').replace(/#.*$/gm, '');
      const read = [...code.matchAll(/\$\{(\w+)(:-[^}]*)?\}/g)].filter((m) => names.includes(m[1]!));
      expect(read.filter((m) => m[2] !== undefined).map((m) => m[0]), file).to.deep.equal([]);
      expect(read.map((m) => m[1]), file).to.deep.equal(file === 'config.yaml' ? [] : ['REDIS_URL', 'GATEWAY_ADMIN_TOKEN']);
    }
    // The embedded default as `npm start` reads it, without and with the variables.
    const plain = loadConfigFile(join(ROOT, 'config.yaml'), { env: {} });
    expect(plain.server).to.include({ host: '127.0.0.1', port: 8080 });
    expect(plain.metrics).to.include({ host: '127.0.0.1', port: 9464 });
    expect(plain.store).to.include({ kind: 'memory', redis_url: 'redis://127.0.0.1:6379' });
    expect(plain.sandbox.demo_api_key).to.equal('gw_test_sandbox_demo_key_000000000000');
    expect(plain.admin.token).to.equal('');
    expect(plain.log.level).to.equal('info');
    const set = loadConfigFile(join(ROOT, 'config.yaml'), { env: { PORT: '8181', METRICS_PORT: '0', GATEWAY_ADMIN_TOKEN: 'an-admin-token-of-the-env', GATEWAY_DEMO_API_KEY: 'env_demo_key_000000000000', LOG_LEVEL: 'warn' } });
    expect([set.server.port, set.metrics.port, set.admin.token, set.sandbox.demo_api_key, set.log.level]).to.deep.equal([8181, 0, 'an-admin-token-of-the-env', 'env_demo_key_000000000000', 'warn']);
  });

  it('the same holds for a config given as text', () => {
    expect(loadConfigText('metrics: { port: 1 }\nsandbox: { enabled: false }\n', ROOT, { env: { METRICS_PORT: '0' } }).metrics.port).to.equal(0);
  });

  it('two `gateway serve` processes share one operator config, set apart by PORT and METRICS_PORT', async function () {
    this.timeout(30_000);
    const file = ownFile();
    const procs: GatewayProcess[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const metricsPort = await freePort();
        const p = await spawnGateway(file, 'all', undefined, { METRICS_PORT: String(metricsPort), LOG_LEVEL: 'info' });
        procs.push(p);
        expect(p.output()).to.include(`"metrics_url":"http://127.0.0.1:${metricsPort}/metrics"`);
        const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
        expect(scraped.status).to.equal(200);
        expect(await scraped.text()).to.include('gateway_build_info');
      }
    } finally {
      for (const p of procs) expect(await p.stop(), p.output().slice(-2000)).to.equal(0);
    }
  });
});

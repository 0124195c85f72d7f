// The `results:` section as `gateway check` and `serve` read it (issue 32): defaults, the
// refusals the loader makes (a bucket for s3, both halves of a key pair, CIDRs), and the warning
// for a local store in Redis mode.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfigText } from '../../engine/load-config.ts';
import { runChecks } from '../../engine/tooling/checks.ts';
import { ROOT } from '../helpers/gateway.ts';

const BASE = `vendors: { dir: "${ROOT}vendors", enabled: [provider_d] }\nsandbox: { enabled: false }\nupstreams: { provider_d: { base_url: "http://127.0.0.1:1", credentials: { api_key: x } } }\n`;

describe('result store configuration', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'gw-results-config-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function check(yaml: string) {
    const file = join(dir, `c${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, BASE + yaml);
    return (await runChecks({ config: file })).findings.filter((f) => f.check === 'config');
  }

  it('defaults to a local store under data/results beside the config, kept 168 hours', () => {
    const c = loadConfigText(BASE, dir, { env: {} });
    expect(c.results.store).to.equal('local');
    expect(c.results.local.dir).to.equal(join(dir, 'data/results'));
    expect(c.results.retention_hours).to.equal(168);
    expect(c.results.content_types.videos).to.include('video/webm');
  });

  it('refuses s3 without a bucket, half a key pair and a bad CIDR, at their pointers', async () => {
    const found = await check('results: { store: s3, s3: { access_key_id: abc }, allow_private_cidrs: ["10.0.0.0/99"] }\n');
    const errors = found.filter((f) => f.severity === 'error').map((f) => `${f.pointer} ${f.message}`);
    expect(errors.some((e) => e.startsWith('/results/s3 ') && e.includes('s3.bucket'))).to.equal(true);
    expect(errors.some((e) => e.includes('access_key_id and secret_access_key'))).to.equal(true);
    expect(errors.some((e) => e.startsWith('/results/allow_private_cidrs/0'))).to.equal(true);
  });

  it('warns for a local store in Redis mode, not in memory mode', async () => {
    const redis = await check('store: { kind: redis }\n');
    expect(redis.map((f) => [f.severity, f.pointer])).to.deep.include(['warning', '/results/store']);
    expect(redis.find((f) => f.pointer === '/results/store')!.message).to.contain('every gateway process must see the same directory');
    const memory = await check('store: { kind: memory }\n');
    expect(memory.filter((f) => f.pointer === '/results/store')).to.deep.equal([]);
    const s3 = await check('store: { kind: redis }\nresults: { store: s3, s3: { bucket: results } }\n');
    expect(s3.filter((f) => f.pointer.startsWith('/results'))).to.deep.equal([]);
  });
});

// The receivers' package (packages/webhooks) as a receiver gets it: packed (which builds it),
// installed into a project of its own outside the repo, then run by plain Node through the
// package name, as an ES module and through require(), against the committed signature vectors.
// signature.test.ts checks the same vectors against the engine's source; this checks what ships.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VECTORS = fileURLToPath(new URL('./signature-vectors.json', import.meta.url));
const vectors = JSON.parse(readFileSync(VECTORS, 'utf8')) as {
  signing: { name: string }[];
  verification: { name: string; expect: string }[];
};

// npm_* variables of an enclosing `npm test` (prefixes, lifecycle event) would steer the inner
// npm toward the repo instead of the temp project.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
const npm = (cwd: string, ...args: string[]) => run('npm', [...args, '--no-audit', '--no-fund', '--offline'], { cwd, env });

// One receiver body for both module systems; each prints the outcome of every vector by name.
const RECEIVER_BODY = `
const vectors = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const outcome = (fn) => { try { fn(); return 'ok'; } catch (e) { return e instanceof WebhookVerificationError ? e.reason : 'threw ' + e; } };
const out = {};
for (const v of vectors.signing) out['sign: ' + v.name] = signPayload(v.secret, v.delivery_id, v.timestamp, Buffer.from(v.body, 'utf8')) === v.expected_signature ? 'ok' : 'mismatch';
for (const c of vectors.verification) out[c.name] = outcome(() => verifyWebhook(Buffer.from(c.body, 'utf8'), c.headers, c.secret, { now: () => c.now_ms }));
const live = (age) => {
  const ts = Math.floor(Date.now() / 1000) - age;
  const headers = { 'X-Service-Webhook-Id': 'whd_live', 'X-Service-Webhook-Timestamp': String(ts), 'X-Service-Webhook-Signature': signPayload('whsec_live', 'whd_live', ts, '{"id":"evt_live"}') };
  return outcome(() => verifyWebhook('{"id":"evt_live"}', headers, 'whsec_live'));
};
out['live: fresh'] = live(0);
out['live: stale'] = live(301);
console.log(JSON.stringify(out));
`;

const CONSUMER_TS = `
import { verifyWebhook, signPayload, WebhookVerificationError, type VerificationFailure, type VerifyOptions } from '@model-gateway/webhooks';
const options: VerifyOptions = { toleranceSeconds: 60, now: () => Date.now() };
let reason: VerificationFailure | undefined;
try {
  const event: unknown = verifyWebhook(Buffer.from('{}'), { 'x-service-webhook-id': ['whd_1'] }, 'whsec_x', options);
  console.log(event);
} catch (err) {
  if (err instanceof WebhookVerificationError) reason = err.reason;
}
const signature: string = signPayload('whsec_x', 'whd_1', 1, '{}');
// @ts-expect-error the declarations are real types, not any: a tolerance is a number
verifyWebhook('{}', {}, 'whsec_x', { toleranceSeconds: '300' });
export { reason, signature };
`;

const CONSUMER_CTS = `
import webhooks = require('@model-gateway/webhooks');
export const reason: webhooks.VerificationFailure = 'bad_signature';
export const verify: typeof webhooks.verifyWebhook = webhooks.verifyWebhook;
`;

describe('receivers\' package (packages/webhooks), packed and installed', function () {
  this.timeout(60_000);
  let dir: string;
  let project: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-webhooks-pkg-'));
    await npm(dir, 'pack', join(ROOT, 'packages/webhooks'), '--pack-destination', dir);
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    expect(tarball).to.equal('model-gateway-webhooks-0.1.0.tgz');
    project = join(dir, 'receiver');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'receiver', version: '1.0.0', private: true }));
    await npm(project, 'install', join(dir, tarball!));
    writeFileSync(join(project, 'esm.mjs'), `import { readFileSync } from 'node:fs';\nimport { verifyWebhook, signPayload, WebhookVerificationError } from '@model-gateway/webhooks';\n${RECEIVER_BODY}`);
    writeFileSync(join(project, 'cjs.cjs'), `const { readFileSync } = require('node:fs');\nconst { verifyWebhook, signPayload, WebhookVerificationError } = require('@model-gateway/webhooks');\n${RECEIVER_BODY}`);
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it('installs with nothing but its build output and no dependencies', () => {
    const installed = join(project, 'node_modules/@model-gateway/webhooks');
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    expect(manifest.dependencies ?? {}).to.deep.equal({});
    expect(manifest.engines.node).to.equal('>=18');
    expect(readdirSync(installed).sort()).to.deep.equal(['README.md', 'dist', 'package.json']);
    expect(readdirSync(join(project, 'node_modules')).filter((f) => !f.startsWith('.'))).to.deep.equal(['@model-gateway']);
  });

  const expected: Record<string, string> = {
    ...Object.fromEntries(vectors.signing.map((v) => [`sign: ${v.name}`, 'ok'])),
    ...Object.fromEntries(vectors.verification.map((c) => [c.name, c.expect])),
    'live: fresh': 'ok',
    'live: stale': 'timestamp_skew',
  };

  it('the vectors include a tampered body and a stale timestamp', () => {
    expect(expected['tampered body (one character changed)']).to.equal('bad_signature');
    expect(expected['expired: signed 301 s ago']).to.equal('timestamp_skew');
  });

  for (const [system, script] of [['import', 'esm.mjs'], ['require', 'cjs.cjs']]) {
    it(`verifies the committed vectors through ${system}`, async () => {
      const { stdout } = await run(process.execPath, [script, VECTORS], { cwd: project, env });
      expect(JSON.parse(stdout)).to.deep.equal(expected);
    });
  }

  it('its declarations type-check in a TypeScript consumer (import and require)', async () => {
    writeFileSync(join(project, 'consumer.mts'), CONSUMER_TS);
    writeFileSync(join(project, 'consumer.cts'), CONSUMER_CTS);
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'nodenext', strict: true, noEmit: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')] },
      files: ['consumer.mts', 'consumer.cts'],
    }));
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project, env }).catch((e: { stdout: string }) => e);
    expect(result.stdout).to.equal('');
  });
});

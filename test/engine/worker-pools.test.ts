// The Piscina pools (webhook sends, large media bodies) under node flags an operator may set:
// V8 flags such as --max-old-space-size are refused in a Worker's explicit execArgv
// (ERR_WORKER_INVALID_EXEC_ARGV), so the pools must leave the workers' flags to node.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { ROOT } from '../helpers/gateway.ts';

const V8_FLAGS = ['--max-old-space-size=512', '--stack-size=2000'];

// Runs in a child node started with V8_FLAGS: one task through each pool, answers on stdout.
const SCRIPT = `
import { createSendPool } from '${ROOT}engine/webhooks/pool.ts';
import { resolveWebhookConfig } from '${ROOT}engine/webhooks/config.ts';
import { configureMedia, parseMediaBody, closeMediaPool } from '${ROOT}engine/media/pool.ts';
const sends = createSendPool(resolveWebhookConfig({}));
const sent = await sends.run({ url: 'https://127.0.0.1:9/hook', secret: 'whsec_x', deliveryId: 'd1', body: '{}', clockOffsetMs: 0, timeoutMs: 1000 });
await sends.destroy();
configureMedia({ mode: 'pool', inlineBelowBytes: 1, blobMinChars: 8 });
const png = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(64)]).toString('base64');
const body = Buffer.from(JSON.stringify({ prompt: 'p', image: png }));
const parsed = await parseMediaBody(new Uint8Array(body), body.length, [{ at: '/image', kind: 'image' }]);
await closeMediaPool();
process.stdout.write(JSON.stringify({ sent, parsed }));
`;

function runWithFlags(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...V8_FLAGS, '--input-type=module', '-e', SCRIPT], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('worker pools under V8 flags', () => {
  it('start and run tasks in a process started with --max-old-space-size and --stack-size', async function () {
    this.timeout(30_000);
    const r = await runWithFlags();
    expect(r.stderr).not.to.include('ERR_WORKER_INVALID_EXEC_ARGV');
    expect(r.code, r.stderr).to.equal(0);
    const { sent, parsed } = JSON.parse(r.stdout);
    // The send worker got its options (no private destinations allowed) and answered.
    expect(sent).to.include({ ok: false, status_code: null });
    expect(sent.error).to.match(/^destination refused/);
    // The media worker parsed the body and held its image as a blob token.
    expect(parsed.body.prompt).to.equal('p');
    expect(parsed.tokens).to.have.length(1);
    expect(parsed.body.image).to.equal(parsed.tokens[0]);
  });
});

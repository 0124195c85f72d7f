// `npm start` semantics: the gateway runs in the foreground, logs JSON lines to stdout, and
// SIGTERM lets in-flight requests finish before it exits 0 — within server.shutdown_grace_ms:
// what is still in flight then (upstream calls included) is cut, and left to be re-driven.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RedisTaskStore } from '../../engine/store/redis/tasks.ts';
import { NO_LIMITS, ROOT, STORE_MODE } from '../helpers/gateway.ts';
import { freePort } from '../helpers/net.ts';

describe('serve: foreground, stdout logs, SIGTERM drains', () => {
  it('finishes a request that is in flight when SIGTERM arrives, then exits 0', async function () {
    this.timeout(45_000);
    const port = await freePort();
    // config.yaml as shipped; in the redis run, on the run's redis-server.
    const store = STORE_MODE === 'redis' ? { GATEWAY_STORE: 'redis', REDIS_URL: process.env.GATEWAY_TEST_REDIS_URL! } : {};
    const child = spawn(process.execPath, [`${ROOT}engine/cli/main.ts`, 'serve'], {
      cwd: ROOT,
      env: { ...process.env, ...store, PORT: String(port), GATEWAY_DEMO_API_KEY: 'gw_test_shutdown_key_000000000000', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      for (let i = 0; !stdout.includes('gateway listening'); i++) {
        if (i > 600) throw new Error(`gateway did not start: ${stdout}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      // Start a request and send its body slowly: it is in flight when SIGTERM arrives.
      const body = JSON.stringify({ prompt: 'in flight' });
      const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/vendors/provider_b/v1/tob/diffusion', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: 'Bearer gw_test_shutdown_key_000000000000' } }, (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        });
        req.on('error', reject);
        req.write(body.slice(0, 5));
        setTimeout(() => {
          child.kill('SIGTERM');
          setTimeout(() => req.end(body.slice(5)), 300);
        }, 200);
      });
      const r = await answer;
      expect(r.status).to.equal(202);
      expect(JSON.parse(r.text).task_info.status).to.equal('pending');
      expect(await exited).to.equal(0);
      const lines = stdout.trim().split('\n').map((l) => JSON.parse(l));
      expect(lines.some((l) => l.msg === 'shutting down' && l.signal === 'SIGTERM')).to.equal(true);
      const access = lines.find((l) => l.msg === 'request');
      expect(access).to.include({ method: 'POST', status: 202, route: 'provider_b/image_generation' });
      expect(access.trace_id).to.match(/^[0-9a-f]{32}$/);
      expect(access.latency_ms).to.be.a('number');
      expect(stdout).not.to.include('gw_test_shutdown_key_000000000000');
      expect(lines.some((l) => l.msg === 'gateway stopped')).to.equal(true);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('exits within the grace period while upstream submits hang, cutting them; the tasks stay pending', async function () {
    this.timeout(30_000);
    const GRACE_MS = 1500;
    // An upstream that accepts connections and requests, and never answers.
    const hung: string[] = [];
    const upstream = createServer((req) => void hung.push(req.url ?? ''));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const port = await freePort();
    const prefix = `sd${process.pid}`;
    const dir = mkdtempSync(join(tmpdir(), 'gw-shutdown-'));
    const config = join(dir, 'config.yaml');
    writeFileSync(config, `
server: { host: 127.0.0.1, port: 0, shutdown_grace_ms: ${GRACE_MS} }
metrics: { port: 0 }
store: ${STORE_MODE === 'redis' ? `{ kind: redis, redis_url: "${process.env.GATEWAY_TEST_REDIS_URL}", key_prefix: ${prefix} }` : '{ kind: memory }'}
sandbox: { enabled: false }
admin: { token: sd-admin }
log: { level: info }
vendors: { dir: ${JSON.stringify(join(ROOT, 'vendors'))}, enabled: [provider_b] }
upstreams:
  provider_b: { base_url: "http://127.0.0.1:${(upstream.address() as AddressInfo).port}", credentials: { api_key: sd-secret }, timeout_ms: 120000 }
${NO_LIMITS}
`);
    const child = spawn(process.execPath, [`${ROOT}engine/cli/main.ts`, 'serve', '--config', config], { cwd: ROOT, env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stdout += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const base = `http://127.0.0.1:${port}`;
    const admin = async (path: string, body: unknown) => {
      const r = await fetch(`${base}/admin/v1${path}`, { method: 'POST', headers: { authorization: 'Bearer sd-admin', 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(r.status, path).to.be.oneOf([200, 201]);
      return (await r.json()) as Record<string, string>;
    };
    try {
      for (let i = 0; !stdout.includes('gateway listening'); i++) {
        if (i > 600) throw new Error(`gateway did not start: ${stdout}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const tenant = await admin('/tenants', { name: 'shutdown' });
      const { key } = await admin(`/tenants/${tenant.id}/keys`, {});
      await admin(`/tenants/${tenant.id}/wallet/topups`, { credits: '1000.00' });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await fetch(`${base}/vendors/provider_b/v1/tob/diffusion`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: `hangs ${i}` }) });
        expect(r.status).to.equal(202);
        ids.push(((await r.json()) as { task_info: { id: string } }).task_info.id);
      }
      for (let i = 0; hung.length < 3; i++) {
        if (i > 200) throw new Error(`the submits did not reach the upstream: ${hung.length}`);
        await new Promise((r) => setTimeout(r, 20));
      }

      const t0 = Date.now();
      child.kill('SIGTERM');
      expect(await exited).to.equal(0);
      const took = Date.now() - t0;
      expect(took, `shutdown took ${took} ms (grace ${GRACE_MS} ms)`).to.be.within(GRACE_MS - 100, GRACE_MS + 1000);
      const lines = stdout.trim().split('\n').flatMap((l) => { try { return [JSON.parse(l)]; } catch { return []; } });
      expect(lines.some((l) => l.msg === 'shutdown grace period over: cutting what is still in flight')).to.equal(true);
      expect(lines.some((l) => l.msg === 'gateway stopped')).to.equal(true);
      // The cut submissions did not fail their tasks (that would be the provider's failure,
      // 3001): they stay pending, for the sweep of the next process to submit again.
      if (STORE_MODE === 'redis') {
        const client = new Redis(process.env.GATEWAY_TEST_REDIS_URL!);
        try {
          const tasks = new RedisTaskStore({ client, prefix: `${prefix}:` });
          for (const id of ids) expect((await tasks.get(id))?.status, id).to.equal('pending');
        } finally {
          client.disconnect();
        }
      }
    } finally {
      child.kill('SIGKILL');
      upstream.closeAllConnections();
      upstream.close();
    }
  });
});

// `npm start` semantics: the gateway runs in the foreground, logs JSON lines to stdout, and
// SIGTERM lets in-flight requests finish before it exits 0.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { ROOT, STORE_MODE } from '../helpers/gateway.ts';
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
});

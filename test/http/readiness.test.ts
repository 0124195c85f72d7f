// Liveness and readiness probes. /healthz: the process serves HTTP (always 200 while it runs).
// /readyz: whether to send it traffic: 200 {status: "ready"}, or 503 with a problem body while
// the store or the job queue does not answer (4003) or while the process drains (4001).
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Gateway } from '../../engine/gateway.ts';
import { call, DEMO_KEY, STORE_MODE, startTestGateway } from '../helpers/gateway.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function expectNotReady(r: Awaited<ReturnType<typeof call>>, code: number): void {
  expect(r.status, r.text).to.equal(503);
  expect(r.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(r.headers.get('traceparent')).to.match(/^00-[0-9a-f]{32}-/);
  expect(r.body).to.include({ status: 503, error_code: code, instance: '/readyz' });
}

describe(`probes: /healthz and /readyz (${STORE_MODE})`, () => {
  let gw: Gateway | undefined;
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });

  it('both answer 200 while the gateway serves', async () => {
    gw = await startTestGateway({ only: ['provider_b'] });
    const live = await call(gw.url, 'GET', '/healthz');
    expect([live.status, live.body]).to.deep.equal([200, { status: 'ok' }]);
    const ready = await call(gw.url, 'GET', '/readyz');
    expect([ready.status, ready.body]).to.deep.equal([200, { status: 'ready' }]);
    expect(ready.headers.get('traceparent')).to.match(/^00-[0-9a-f]{32}-/);
  });

  it('/readyz answers 503 / 4001 once the gateway drains (close() called, a request still in flight)', async () => {
    const g = (gw = await startTestGateway({ only: ['provider_b'] }));
    const { hostname, port } = new URL(g.url);
    const socket = connect(Number(port), hostname);
    let received = '';
    socket.on('data', (d) => (received += d.toString('latin1')));
    await new Promise((resolve) => socket.once('connect', resolve));
    // A create whose body is still arriving keeps the process draining...
    const body = JSON.stringify({ prompt: 'in flight' });
    socket.write(`POST /vendors/provider_b/v1/tob/diffusion HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${DEMO_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 4)}`);
    await sleep(100);
    const closing = g.close();
    await sleep(100);
    // ...and a probe pipelined on its connection behind it is answered while draining.
    socket.write(`${body.slice(4)}GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n`);
    for (let i = 0; !/"instance":"\/readyz"/.test(received); i++) {
      if (i > 100) throw new Error(`no probe answer: ${received}`);
      await sleep(20);
    }
    socket.destroy();
    await closing;
    gw = undefined;
    const [first, second] = received.split(/(?=HTTP\/1\.1 )/);
    expect(first).to.match(/^HTTP\/1\.1 202 /);
    expect(second).to.match(/^HTTP\/1\.1 503 /);
    expect(second).to.match(/\r\ncontent-type: application\/problem\+json/i);
    expect(second).to.match(/\r\ntraceparent: 00-[0-9a-f]{32}-/i);
    expect(JSON.parse(second!.slice(second!.indexOf('\r\n\r\n') + 4))).to.include({ status: 503, error_code: 4001, instance: '/readyz' });
  });

  if (STORE_MODE === 'redis') {
    describe('redis: the store and the job queue', function () {
      this.timeout(30_000);
      let redis: RedisServer;
      let dir: string;
      afterEach(async () => {
        await gw?.close();
        gw = undefined;
        await redis.stop();
        rmSync(dir, { recursive: true, force: true });
      });

      it('/readyz answers 503 / 4003 quickly while Redis is down, 200 once it is back; /healthz stays 200', async () => {
        dir = mkdtempSync(join(tmpdir(), 'gw-probes-'));
        redis = await startRedis({ aof: true, dir }); // the restart keeps the demo tenant
        const g = (gw = await startTestGateway({ only: ['provider_b'], store: `{ kind: redis, redis_url: "${redis.url}", key_prefix: probes }` }));
        expect((await call(g.url, 'GET', '/readyz')).status).to.equal(200);

        redis.process.kill('SIGKILL');
        await sleep(200);
        const t0 = Date.now();
        const down = await call(g.url, 'GET', '/readyz');
        expect(Date.now() - t0, 'probe time (ms)').to.be.below(1000);
        expectNotReady(down, 4003);
        expect(down.body.detail).to.match(/store and job queue/);
        expect(down.headers.get('retry-after')).to.match(/^\d+$/);
        expect((await call(g.url, 'GET', '/healthz')).status).to.equal(200);

        redis = await startRedis({ aof: true, dir, port: redis.port });
        for (const deadline = Date.now() + 10_000; (await call(g.url, 'GET', '/readyz')).status !== 200; await sleep(100)) {
          if (Date.now() > deadline) throw new Error('/readyz did not recover after Redis came back');
        }
        // The job queue resumed too: a task created now runs to the end.
        const created = await call(g.url, 'POST', '/vendors/provider_b/v1/tob/diffusion', { key: DEMO_KEY, body: { prompt: 'after' } });
        expect(created.status).to.equal(202);
        for (const deadline = Date.now() + 10_000; ; await sleep(50)) {
          const r = await call(g.url, 'GET', `/vendors/provider_b/v1/tob/diffusion/${created.body.task_info.id}`, { key: DEMO_KEY });
          if (r.body?.task_info?.status === 'completed') break;
          if (Date.now() > deadline) throw new Error(`task still ${r.body?.task_info?.status}`);
        }
      });
    });
  }
});

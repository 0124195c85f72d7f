// A delivery that ends `failed` says why (issue 16, item 12): the last answer's HTTP status or
// the network error, and how many attempts were made. Through a real gateway (memory or Redis
// store: this file is in both halves of the suite) and a real HTTPS receiver.
import { expect } from 'chai';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway } from '../helpers/gateway.ts';
import { waitFor } from './support/harness.ts';
import { testPki } from './support/pki.ts';
import { Receiver } from './support/receiver.ts';

describe('a failed webhook delivery carries its failure_reason', () => {
  let gw: Gateway;
  let rx: Receiver;
  let key: string;
  before(async () => {
    rx = await Receiver.start((r) => ({ status: r.path === '/gone' ? 410 : 500 }));
    gw = await startTestGateway({
      only: ['provider_b'],
      // Six attempts back to back (the schedule is scaled by timing.scale as well), each with
      // 10 s (scaled) for its answer: the reason must be the receiver's, not a slow handshake's.
      yaml: `webhooks: { allow_private_cidrs: ["127.0.0.1/32"], ca_pem: ${JSON.stringify([testPki().caPem])}, retry_schedule_ms: [1, 1, 1, 1, 1], timeout_ms: 10000000 }`,
    });
    ({ key } = await newTenant(gw, { credits: 10 }));
  });
  after(async () => {
    await gw.close();
    await rx.close();
  });

  /** Register an endpoint at `url`, send it the test event, wait until the delivery is finished. */
  async function failedDelivery(url: string): Promise<Record<string, any>> {
    const ep = await call(gw.url, 'POST', '/v1/webhooks/endpoints', { key, body: { url, events: ['task.failed'] } });
    expect(ep.status, ep.text).to.equal(201);
    const sent = await call(gw.url, 'POST', `/v1/webhooks/endpoints/${ep.body.id}/test`, { key });
    const path = `/v1/webhooks/deliveries/${sent.body.delivery.id}`;
    await waitFor(async () => (await call(gw.url, 'GET', path, { key })).body.status !== 'pending', 10_000, 'delivery finished');
    const detail = (await call(gw.url, 'GET', path, { key })).body;
    const listed = (await call(gw.url, 'GET', `/v1/webhooks/endpoints/${ep.body.id}/deliveries`, { key })).body.data[0];
    expect(listed.failure_reason, 'the list shows it too').to.equal(detail.failure_reason);
    return detail;
  }

  it('a receiver answering 500 every time: "HTTP 500 after 6 attempts"', async () => {
    const d = await failedDelivery(rx.url('/fail'));
    expect(d).to.include({ status: 'failed', attempt_count: 6, last_status_code: 500, failure_reason: 'HTTP 500 after 6 attempts' });
    expect(d.attempts).to.have.length(6);
  });

  it('a receiver that refuses connections: the network error code', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const d = await failedDelivery(`https://localhost:${port}/hook`);
    expect(d).to.include({ status: 'failed', attempt_count: 6, last_status_code: null });
    expect(d.failure_reason).to.match(/^ECONNREFUSED\b.* after 6 attempts$/);
  });

  it('a receiver answering 410 Gone: the endpoint was disabled', async () => {
    const d = await failedDelivery(rx.url('/gone'));
    expect(d).to.include({ status: 'failed', attempt_count: 1, last_status_code: 410 });
    expect(d.failure_reason).to.match(/410 Gone.*disabled \(endpoint_gone\)/);
  });
});

import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { harness, waitFor, taskData, TENANT, type Harness } from './support/harness.ts';
import { Receiver, independentSignature, type Received } from './support/receiver.ts';
import { verifyWebhook, WebhookVerificationError } from '../../engine/webhooks/signature.ts';
import { EVENT_TYPES } from '../../engine/events/types.ts';
import type { HostResolver } from '../../engine/webhooks/ssrf.ts';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const header = (r: Received, name: string) => r.headers[name.toLowerCase()] as string;

function checkSigned(r: Received, secret: string): Record<string, unknown> {
  const id = header(r, 'X-Service-Webhook-Id');
  const ts = header(r, 'X-Service-Webhook-Timestamp');
  const sig = header(r, 'X-Service-Webhook-Signature');
  expect(sig).to.equal(independentSignature(secret, id, ts, r.body));
  return verifyWebhook(r.body, r.headers, secret) as Record<string, unknown>;
}

describe('webhook delivery over HTTPS', function () {
  this.timeout(20_000);
  let h: Harness;
  let rx: Receiver;

  afterEach(async () => {
    await h?.shutdown();
    await rx?.close();
  });

  it('delivers every event type, signed, with the spec headers and envelope', async () => {
    rx = await Receiver.start();
    h = harness();
    const all = await h.endpoints.create(TENANT, { url: rx.url('/all'), events: [...EVENT_TYPES] });
    const billing = await h.endpoints.create(TENANT, { url: rx.url('/billing'), events: ['balance.low'] });
    const off = await h.endpoints.create(TENANT, { url: rx.url('/off'), events: [...EVENT_TYPES], enabled: false });

    const balance = { user_id: TENANT, payload: { available_balance: '999.50', trigger_threshold: '1000.00', currency: 'credits' } };
    const events = [
      await h.bus.emit(TENANT, 'task.created', taskData('pending')),
      await h.bus.emit(TENANT, 'task.succeeded', taskData('completed', { videos: ['https://results.example.com/v.mp4'] })),
      await h.bus.emit(TENANT, 'task.failed', taskData('failed')),
      await h.bus.emit(TENANT, 'balance.low', balance),
      await h.bus.emit('someone-else', 'task.created', taskData('pending')),
    ];
    await waitFor(() => rx.requests.length >= 5, 10_000, '5 deliveries');
    await waitFor(async () => (await h.store.deliveryStats(all.id)).succeeded === 4, 5000, 'log updated');

    const toAll = rx.requests.filter((r) => r.path === '/all');
    expect(toAll).to.have.length(4);
    expect(rx.requests.filter((r) => r.path === '/billing')).to.have.length(1);
    expect(rx.requests.filter((r) => r.path === '/off')).to.have.length(0);

    for (const [i, event] of events.slice(0, 4).entries()) {
      const r = toAll.find((x) => JSON.parse(x.body.toString()).id === event.id)!;
      expect(r, event.type).to.exist;
      expect(r.method).to.equal('POST');
      expect(header(r, 'content-type')).to.equal('application/json');
      expect(header(r, 'user-agent')).to.equal(`ModelGateway-Webhook/${VERSION}`);
      const id = header(r, 'X-Service-Webhook-Id');
      expect(id).to.match(/^whd_[0-9A-Za-z]{24}$/);
      const ts = Number(header(r, 'X-Service-Webhook-Timestamp'));
      expect(Math.abs(ts - Date.now() / 1000)).to.be.below(5);
      const parsed = checkSigned(r, all.secret);
      expect(Object.keys(parsed)).to.deep.equal(['id', 'type', 'created_at', 'data']);
      expect(parsed).to.deep.equal({ id: event.id, type: event.type, created_at: event.created_at, data: event.data });
      expect(r.body.toString()).to.not.include('tenant_id');
      const logged = (await h.store.listDeliveriesByEvent(TENANT, event.id, { limit: 10 })).data.find((d) => d.endpoint_id === all.id)!;
      expect(logged.id, `delivery id of event ${i}`).to.equal(id);
      expect(logged).to.include({ status: 'succeeded', attempt_count: 1, last_status_code: 200 });
    }
    // Delivery ids are unique per (event, endpoint).
    const ids = rx.requests.map((r) => header(r, 'X-Service-Webhook-Id'));
    expect(new Set(ids).size).to.equal(ids.length);
    const bill = rx.requests.find((r) => r.path === '/billing')!;
    expect(checkSigned(bill, billing.secret).data).to.deep.equal(balance);
    expect(() => verifyWebhook(bill.body, bill.headers, all.secret)).to.throw(WebhookVerificationError).with.property('reason', 'bad_signature');
    expect(off.enabled).to.equal(false);
  });

  it('re-signs every attempt: same delivery id and body, new timestamp and signature', async () => {
    rx = await Receiver.start((r) => ({ status: r.n === 1 ? 500 : 200 }));
    // One retry, 1.05 s later, so the second-resolution timestamp must differ.
    h = harness({ config: { retry_schedule_ms: [1050] } });
    const ep = await h.endpoints.create(TENANT, { url: rx.url(), events: ['task.succeeded'] });
    await h.bus.emit(TENANT, 'task.succeeded', taskData('completed'));
    await waitFor(() => rx.requests.length === 2, 5000, 'two attempts');
    const [a, b] = rx.requests as [Received, Received];
    expect(header(a, 'X-Service-Webhook-Id')).to.equal(header(b, 'X-Service-Webhook-Id'));
    expect(a.body.equals(b.body)).to.equal(true);
    expect(header(b, 'X-Service-Webhook-Timestamp')).to.not.equal(header(a, 'X-Service-Webhook-Timestamp'));
    expect(header(b, 'X-Service-Webhook-Signature')).to.not.equal(header(a, 'X-Service-Webhook-Signature'));
    checkSigned(a, ep.secret);
    checkSigned(b, ep.secret);
  });

  it('signs with the rotated secret at once; the old one stops verifying', async () => {
    rx = await Receiver.start();
    h = harness();
    const ep = await h.endpoints.create(TENANT, { url: rx.url(), events: ['task.created'] });
    await h.bus.emit(TENANT, 'task.created', taskData('pending'));
    await waitFor(() => rx.requests.length === 1);
    checkSigned(rx.requests[0]!, ep.secret);

    const rotated = await h.endpoints.rotateSecret(TENANT, ep.id);
    await h.bus.emit(TENANT, 'task.created', taskData('pending'));
    await waitFor(() => rx.requests.length === 2);
    const r = rx.requests[1]!;
    checkSigned(r, rotated.secret);
    expect(() => verifyWebhook(r.body, r.headers, ep.secret)).to.throw(WebhookVerificationError).with.property('reason', 'bad_signature');
  });

  it('never sends more than 64 KB: oversized task events go out thin', async () => {
    rx = await Receiver.start();
    h = harness();
    const ep = await h.endpoints.create(TENANT, { url: rx.url(), events: ['task.succeeded'] });
    const images = Array.from({ length: 1200 }, (_, i) => `https://results.example.com/batch/${i}/${'x'.repeat(40)}.png`);
    const big = await h.bus.emit(TENANT, 'task.succeeded', taskData('completed', { images }));
    expect(JSON.stringify(big.data).length).to.be.above(64 * 1024);
    await waitFor(() => rx.requests.length === 1);
    const r = rx.requests[0]!;
    expect(r.body.length).to.be.at.most(64 * 1024);
    const parsed = checkSigned(r, ep.secret) as { id: string; data: { vendor: string; payload: Record<string, unknown> } };
    expect(parsed.id).to.equal(big.id);
    expect(parsed.data.vendor).to.equal('provider_a');
    expect(parsed.data.payload).to.deep.equal({ task_info: (big.data.payload as { task_info: unknown }).task_info, truncated: true });
    const logged = (await h.store.listDeliveriesByEvent(TENANT, big.id, { limit: 1 })).data[0]!;
    expect(logged.truncated).to.equal(true);
  });

  it('trusts only the configured CAs: a receiver with an unknown CA fails the attempt', async () => {
    rx = await Receiver.start(() => ({ status: 200 }), { stray: true });
    h = harness({ config: { retry_schedule_ms: [] } });
    await h.endpoints.create(TENANT, { url: rx.url(), events: ['task.created'] });
    const event = await h.bus.emit(TENANT, 'task.created', taskData('pending'));
    const d = await waitFor(async () => {
      const x = (await h.store.listDeliveriesByEvent(TENANT, event.id, { limit: 1 })).data[0];
      return x?.status === 'failed' && x;
    });
    expect(d.last_error).to.match(/certificate|UNABLE_TO_VERIFY|self.signed/i);
    expect(rx.requests).to.have.length(0);
  });

  describe('connect-time SSRF guard', () => {
    // Save-time DNS says "public"; at send time localhost really is 127.0.0.1 (a rebinding).
    const rebinding: HostResolver = async () => [{ address: '93.184.216.34', family: 4 }];

    it('refuses a host that resolves to a private address when the attempt connects', async () => {
      rx = await Receiver.start();
      h = harness({ resolveHost: rebinding, config: { allow_private_cidrs: [], retry_schedule_ms: [] } });
      const ep = await h.endpoints.create(TENANT, { url: rx.url(), events: ['task.created'] });
      const event = await h.bus.emit(TENANT, 'task.created', taskData('pending'));
      const d = await waitFor(async () => {
        const x = (await h.store.listDeliveriesByEvent(TENANT, event.id, { limit: 1 })).data[0];
        return x?.status === 'failed' && x;
      });
      expect(d.endpoint_id).to.equal(ep.id);
      expect(d.last_error).to.equal('destination refused: localhost → 127.0.0.1 is a loopback address');
      expect(rx.requests).to.have.length(0);
    });

    it('refuses a literal private IP at send time too (e.g. a URL stored before an allow-list change)', async () => {
      rx = await Receiver.start();
      h = harness({ config: { allow_private_cidrs: [], retry_schedule_ms: [] } });
      // Save through the store, as an older allow-list would have let it through.
      const now = new Date().toISOString();
      await h.store.createEndpointIfUnderLimit({
        id: 'we_literal', tenant_id: TENANT, url: `https://127.0.0.1:${rx.port}/hook`, events: ['task.created'], description: null,
        enabled: true, disabled_reason: null, secret: 'whsec_0123456789abcdefghijABCDEFGHIJ01', secret_preview: 'whsec_...IJ01', created_at: now, updated_at: now,
      }, 5);
      const event = await h.bus.emit(TENANT, 'task.created', taskData('pending'));
      const d = await waitFor(async () => {
        const x = (await h.store.listDeliveriesByEvent(TENANT, event.id, { limit: 5 })).data.find((y) => y.endpoint_id === 'we_literal');
        return x?.status === 'failed' && x;
      });
      expect(d.last_error).to.equal('destination refused: 127.0.0.1 is a loopback address');
      expect(rx.requests).to.have.length(0);
    });

    it('delivers to the same receiver once 127.0.0.1/32 is allow-listed', async () => {
      rx = await Receiver.start();
      h = harness({ resolveHost: rebinding, config: { allow_private_cidrs: ['127.0.0.1/32'] } });
      await h.endpoints.create(TENANT, { url: rx.url(), events: ['task.created'] });
      await h.bus.emit(TENANT, 'task.created', taskData('pending'));
      await waitFor(() => rx.requests.length === 1);
    });
  });
});

import { expect } from 'chai';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveWebhookConfig, scaled, maxAttempts, WEBHOOK_DEFAULTS } from '../../engine/webhooks/config.ts';
import { serializeEvent } from '../../engine/webhooks/payload.ts';
import type { GatewayEvent } from '../../engine/events/bus.ts';
import { testPki } from './support/pki.ts';

describe('webhooks config', () => {
  it('defaults to the spec limits', () => {
    const c = resolveWebhookConfig();
    expect(c).to.deep.include({
      max_endpoints: 5, timeout_ms: 30_000, retry_schedule_ms: [15_000, 60_000, 300_000, 1_800_000, 3_600_000], time_scale: 1,
      rate_limit_per_minute: 600, max_payload_bytes: 65_536, retention_days: 30, allow_private_cidrs: [], ca_pem: [],
    });
    expect(maxAttempts(c)).to.equal(6);
    expect(scaled(c)).to.deep.equal({ timeoutMs: 30_000, retryDelaysMs: [15_000, 60_000, 300_000, 1_800_000, 3_600_000], rateWindowMs: 60_100, rateMinGapMs: 60_100 / 1200 });
    expect(Object.isFrozen(c)).to.equal(true);
  });

  it('scales delivery durations by time_scale', () => {
    const s = scaled(resolveWebhookConfig({ time_scale: 0.001, rate_limit_margin_ms: 0 }));
    expect(s).to.deep.equal({ timeoutMs: 1000, retryDelaysMs: [15, 60, 300, 1800, 3600], rateWindowMs: 60, rateMinGapMs: 0.05 });
  });

  it('scales the attempt timeout down to 1 s at most (a TLS handshake does not get faster with the test clock)', () => {
    expect(scaled(resolveWebhookConfig({ time_scale: 0.1 })).timeoutMs).to.equal(3000);
    expect(scaled(resolveWebhookConfig({ time_scale: 0.001 })).timeoutMs).to.equal(1000);
    expect(scaled(resolveWebhookConfig({ time_scale: 0.001, timeout_ms: 200 })).timeoutMs).to.equal(200);
  });

  it('reports every problem at once', () => {
    let message = '';
    try {
      resolveWebhookConfig({ max_endpoints: 0, retry_schedule_ms: [1, -5], time_scale: 'fast', nope: true, ca_pem: ['/no/such/ca.pem'] });
    } catch (err) {
      message = (err as Error).message;
    }
    for (const key of ['max_endpoints', 'retry_schedule_ms', 'time_scale', 'webhooks.nope: unknown setting', 'cannot read CA file /no/such/ca.pem']) {
      expect(message).to.include(key);
    }
  });

  it('reads ca_pem entries that are file paths; keeps PEM text as is', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wh-ca-'));
    try {
      const file = join(dir, 'ca.pem');
      writeFileSync(file, testPki().caPem);
      const c = resolveWebhookConfig({ ca_pem: [file, testPki().caPem] });
      expect(c.ca_pem).to.deep.equal([testPki().caPem, testPki().caPem]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('does not share the defaults object', () => {
    const c = resolveWebhookConfig({ allow_private_cidrs: ['10.0.0.0/8'] });
    expect(WEBHOOK_DEFAULTS.allow_private_cidrs).to.deep.equal([]);
    expect(c.allow_private_cidrs).to.deep.equal(['10.0.0.0/8']);
  });
});

describe('webhook payload serialization', () => {
  const base = { id: 'evt_1', created_at: '2026-01-01T00:00:00.000Z', tenant_id: 'tenant-secret-id' };
  const task = (extra: Record<string, unknown>): GatewayEvent => ({
    ...base, type: 'task.succeeded',
    data: { vendor: 'provider_b', model_name: 'imagine', payload: { task_info: { id: 't1', status: 'completed' }, ...extra } },
  });

  it('serializes the envelope only, in spec order, without tenant_id', () => {
    const { body, truncated } = serializeEvent(task({ images: ['https://r/1.png'] }), 65_536);
    expect(truncated).to.equal(false);
    expect(body).to.equal('{"id":"evt_1","type":"task.succeeded","created_at":"2026-01-01T00:00:00.000Z","data":{"vendor":"provider_b","model_name":"imagine","payload":{"task_info":{"id":"t1","status":"completed"},"images":["https://r/1.png"]}}}');
  });

  it('keeps a body of exactly the limit; one byte more goes thin', () => {
    const probe = serializeEvent(task({ pad: '' }), 1 << 20).body;
    const limit = 2048;
    const exact = task({ pad: 'x'.repeat(limit - Buffer.byteLength(probe)) });
    expect(Buffer.byteLength(serializeEvent(exact, limit).body)).to.equal(limit);
    expect(serializeEvent(exact, limit).truncated).to.equal(false);
    const over = task({ pad: 'x'.repeat(limit - Buffer.byteLength(probe) + 1) });
    const thin = serializeEvent(over, limit);
    expect(thin.truncated).to.equal(true);
    expect(JSON.parse(thin.body).data).to.deep.equal({ vendor: 'provider_b', model_name: 'imagine', payload: { task_info: { id: 't1', status: 'completed' }, truncated: true } });
  });

  it('counts bytes, not characters', () => {
    const e = task({ note: '東'.repeat(500) }); // 1500 bytes of UTF-8 in 500 characters
    expect(serializeEvent(e, 1024).truncated).to.equal(true);
  });

  it('falls back to a minimal event when even task_info is too big', () => {
    const e = task({});
    (e.data.payload as { task_info: Record<string, unknown> }).task_info.huge = 'y'.repeat(5000);
    const { body, truncated } = serializeEvent(e, 1024);
    expect(truncated).to.equal(true);
    expect(JSON.parse(body)).to.deep.equal({
      id: 'evt_1', type: 'task.succeeded', created_at: base.created_at,
      data: { truncated: true, vendor: 'provider_b', model_name: 'imagine', payload: { task_info: { id: 't1', status: 'completed' }, truncated: true } },
    });
    expect(Buffer.byteLength(body)).to.be.at.most(1024);
  });

  it('never exceeds the limit for other families either', () => {
    const e: GatewayEvent = { ...base, type: 'balance.low', data: { user_id: 'u', payload: { note: 'z'.repeat(4000) } } };
    const { body, truncated } = serializeEvent(e, 1024);
    expect(truncated).to.equal(true);
    expect(JSON.parse(body).data).to.deep.equal({ truncated: true });
  });
});

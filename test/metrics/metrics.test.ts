// Prometheus metrics as a scraper reads them: the listener's text format, the counters a create,
// a chat call, refusals and webhooks move, bounded labels, the token mode on the main port and
// the capped tenant label. Counters are process-wide, so each case reads deltas.
import { expect } from 'chai';
import { createServer } from 'node:net';
import { spawnSync } from 'node:child_process';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { waitFor } from '../webhooks/support/harness.ts';
import { testPki } from '../webhooks/support/pki.ts';
import { Receiver } from '../webhooks/support/receiver.ts';
import { metricValue as value } from '../helpers/metrics.ts';

const D = '/vendors/provider_d/v1/model_d/generation';
const CHAT = '/v1/chat/completions';
const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const TOKEN = 'metrics-token-0123456789';


async function scrape(url: string, headers: Record<string, string> = {}): Promise<string> {
  const r = await fetch(url, { headers });
  expect(r.status, await r.clone().text()).to.equal(200);
  expect(r.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
  return r.text();
}

describe('Prometheus metrics', function () {
  this.timeout(30_000);
  let gw: Gateway;
  let key: string;

  before(async () => {
    gw = await startTestGateway();
    ({ key } = await newTenant(gw));
  });
  after(() => gw?.close());

  it('are served on their own listener, off the API port; other paths and methods get problems with Traceparent', async () => {
    expect(gw.metricsUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const text = await scrape(gw.metricsUrl!);
    for (const name of ['gateway_http_requests_in_flight', 'process_cpu_seconds_total', 'nodejs_eventloop_lag_p99_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_gc_duration_seconds_bucket']) {
      expect(text, name).to.match(new RegExp(`^${name}`, 'm'));
    }
    const other = await fetch(gw.metricsUrl!.replace('/metrics', '/other'));
    expect([other.status, other.headers.get('content-type')]).to.deep.equal([404, 'application/problem+json']);
    expect(other.headers.get('traceparent')).to.match(/^00-/);
    const post = await fetch(gw.metricsUrl!, { method: 'POST' });
    expect([post.status, post.headers.get('allow')]).to.deep.equal([405, 'GET, HEAD']);
    // Not on the tenant-facing port (no token configured).
    expect((await call(gw.url, 'GET', '/metrics')).status).to.equal(404);
  });

  it('a task\'s trip moves the HTTP, task, upstream and billing series, labelled by route and vendor', async () => {
    const before = await scrape(gw.metricsUrl!);
    const r = await call(gw.url, 'POST', D, { key, body: { prompt: 'a fox' } });
    expect(r.status).to.equal(202);
    await waitForTask(gw.url, `${D}/${r.body.task_info.id}`, key);
    await call(gw.url, 'GET', '/vendors/provider_d/v1/nothing', { key });
    await call(gw.url, 'GET', '/v1/balance', { key });
    const after = await scrape(gw.metricsUrl!);
    const delta = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);

    expect(delta('gateway_http_requests_total', { route: 'provider_d/image_generation', method: 'POST', status_class: '2xx', code: '' })).to.equal(1);
    expect(delta('gateway_http_request_duration_seconds_count', { route: 'provider_d/image_generation', method: 'POST' })).to.equal(1);
    expect(delta('gateway_http_requests_total', { route: 'none', status_class: '4xx', code: '2005' })).to.equal(1);
    expect(delta('gateway_http_requests_total', { route: '/v1/balance', method: 'GET', status_class: '2xx' })).to.equal(1);
    expect(delta('gateway_tasks_created_total', { vendor: 'provider_d', route: 'provider_d/image_generation' })).to.equal(1);
    expect(delta('gateway_tasks_finished_total', { vendor: 'provider_d', outcome: 'completed' })).to.equal(1);
    expect(delta('gateway_task_duration_seconds_count', { vendor: 'provider_d', outcome: 'completed' })).to.equal(1);
    expect(delta('gateway_upstream_requests_total', { vendor: 'provider_d', stage: 'submit', status_class: '2xx' })).to.equal(1);
    expect(delta('gateway_upstream_requests_total', { vendor: 'provider_d', stage: 'poll' })).to.be.at.least(1);
    expect(delta('gateway_billing_credits_total', { operation: 'held' })).to.be.greaterThan(0);
    expect(delta('gateway_billing_credits_total', { operation: 'settled' }) + delta('gateway_billing_credits_total', { operation: 'released' }))
      .to.be.closeTo(delta('gateway_billing_credits_total', { operation: 'held' }), 1e-9);
    // Labels never carry a tenant, key or task id.
    expect(after).not.to.include(r.body.task_info.id);
    expect(after).not.to.include(key);
  });

  it('scrape-time gauges: active tasks by vendor, the job queues, dependencies; build info', async () => {
    const text = await scrape(gw.metricsUrl!);
    expect(text).to.match(/^# TYPE gateway_tasks_active gauge$/m);
    expect(text).to.match(/^# TYPE gateway_job_queue_lag_seconds gauge$/m);
    expect(value(text, 'gateway_dependency_up', { dependency: 'store' })).to.equal(1);
    expect(value(text, 'gateway_dependency_up', { dependency: 'job_queue' })).to.equal(1);
    expect(text).to.match(/^gateway_build_info\{version="\d+\.\d+\.\d+",node="\d+\.\d+\.\d+"\} 1$/m);
  });

  it('a chat completion counts as a proxy call of its vendor; a refusal for funds counts as a 402', async () => {
    const before = await scrape(gw.metricsUrl!);
    // Long enough to cost at least one milli-credit.
    const ok = await call(gw.url, 'POST', CHAT, { key, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi '.repeat(3000) }] } });
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
    const poor = await newTenant(gw, { credits: 0 });
    const refused = await call(gw.url, 'POST', D, { key: poor.key, body: { prompt: 'a fox' } });
    expect(refused.status).to.equal(402);
    // The settlement of the chat's hold follows the answer.
    let after = await scrape(gw.metricsUrl!);
    for (let i = 0; i < 50 && value(after, 'gateway_billing_credits_total', { operation: 'settled' }) === value(before, 'gateway_billing_credits_total', { operation: 'settled' }); i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await scrape(gw.metricsUrl!);
    }
    const delta = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);
    expect(delta('gateway_upstream_requests_total', { stage: 'proxy', status_class: '2xx' })).to.equal(1);
    expect(delta('gateway_upstream_request_duration_seconds_count', { stage: 'proxy' })).to.equal(1);
    expect(delta('gateway_billing_credits_total', { operation: 'held' })).to.be.greaterThan(0);
    expect(delta('gateway_billing_credits_total', { operation: 'settled' })).to.be.greaterThan(0);
    expect(delta('gateway_billing_refusals_total')).to.equal(1);
    expect(delta('gateway_http_requests_total', { status_class: '4xx', code: '1003' })).to.equal(1);
  });

  it('a scripted run moves each counter by the exact amount, and the exposition passes promtool check metrics', async () => {
    let hooks = 0;
    // The receiver fails the first delivery attempt and accepts the retry.
    const rx = await Receiver.start(() => ({ status: ++hooks === 1 ? 500 : 200 }));
    // The sweep stays out of it (at this time scale its grace is a few ms, and a re-driven
    // submission is one more upstream call than the script makes).
    const run = await startTestGateway({ only: ['provider_b', 'provider_c'], timing: 'sweep_grace_ms: 3600000', yaml: `webhooks: { allow_private_cidrs: ["127.0.0.1/32"], ca_pem: ${JSON.stringify([testPki().caPem])} }` });
    try {
      const { key: k } = await newTenant(run);
      const ep = await call(run.url, 'POST', '/v1/webhooks/endpoints', { key: k, body: { url: rx.url('/m'), events: ['task.succeeded'] } });
      expect(ep.status).to.equal(201);
      const before = await scrape(run.metricsUrl!);
      const ids: string[] = [];
      for (const prompt of ['a fox', 'a fox [sandbox:fail]', 'a fox [sandbox:hang]']) {
        const r = await call(run.url, 'POST', IMAGES, { key: k, body: { prompt } });
        expect(r.status).to.equal(202);
        ids.push(r.body.task_info.id);
      }
      const ends = await Promise.all(ids.map((id) => waitForTask(run.url, `${IMAGES}/${id}`, k, ['completed', 'failed'], 20_000)));
      expect(ends.map((e) => e.body.task_info.error?.code ?? e.body.task_info.status)).to.deep.equal(['completed', 3005, 4008]);
      const stream = await fetch(`${run.url}${CHAT}`, { method: 'POST', headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] }) });
      expect(stream.status).to.equal(200);
      await stream.text();
      await waitFor(() => hooks >= 2, 10_000, 'the retried delivery');
      let after = await scrape(run.metricsUrl!);
      // The delivery's success and the stream's access line (written once its charge is recorded) come after the client saw them.
      const settledIn = (text: string) =>
        value(text, 'gateway_webhook_attempts_total', { outcome: 'delivered' }) > value(before, 'gateway_webhook_attempts_total', { outcome: 'delivered' }) &&
        value(text, 'gateway_upstream_time_to_first_byte_seconds_count', { vendor: 'provider_c' }) > value(before, 'gateway_upstream_time_to_first_byte_seconds_count', { vendor: 'provider_c' });
      for (let i = 0; i < 100 && !settledIn(after); i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        after = await scrape(run.metricsUrl!);
      }
      const delta = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);
      const v = { vendor: 'provider_b' };
      expect({
        created: delta('gateway_tasks_created_total', v),
        completed: delta('gateway_tasks_finished_total', { ...v, outcome: 'completed' }),
        failed3005: delta('gateway_tasks_finished_total', { ...v, outcome: 'failed', code: '3005' }),
        timedOut4008: delta('gateway_tasks_finished_total', { ...v, outcome: 'failed', code: '4008' }),
        durations: delta('gateway_task_duration_seconds_count', v),
        upstream3005: delta('gateway_upstream_errors_total', { ...v, code: '3005' }),
        submits: delta('gateway_upstream_requests_total', { ...v, stage: 'submit' }),
        streamTtfb: delta('gateway_upstream_time_to_first_byte_seconds_count', { vendor: 'provider_c' }),
        proxyCalls: delta('gateway_upstream_requests_total', { vendor: 'provider_c', stage: 'proxy', status_class: '2xx' }),
        attemptsFailed: delta('gateway_webhook_attempts_total', { outcome: 'http_error' }),
        attemptsDelivered: delta('gateway_webhook_attempts_total', { outcome: 'delivered' }),
        deliveryLatencies: delta('gateway_webhook_delivery_latency_seconds_count'),
        finalFailures: delta('gateway_webhook_deliveries_failed_total'),
      }).to.deep.equal({
        created: 3, completed: 1, failed3005: 1, timedOut4008: 1, durations: 3, upstream3005: 1, submits: 3,
        streamTtfb: 1, proxyCalls: 1, attemptsFailed: 1, attemptsDelivered: 1, deliveryLatencies: 1, finalFailures: 0,
      });
      // Two tasks failed and were released in full; one completed and settled.
      expect(delta('gateway_billing_credits_total', { operation: 'settled' }) + delta('gateway_billing_credits_total', { operation: 'released' }))
        .to.be.closeTo(delta('gateway_billing_credits_total', { operation: 'held' }), 1e-9);
      const lint = spawnSync('promtool', ['check', 'metrics'], { input: after, encoding: 'utf8' });
      expect(lint.error, 'promtool is missing: sudo apt-get update && sudo apt-get install -y --no-install-recommends prometheus').to.equal(undefined);
      // It parses (a parse error is "error while linting"), and no lint finding names one of ours
      // (prom-client's own nodejs_active_*_total gauges draw a naming finding we cannot change).
      const findings = (lint.stdout + lint.stderr).split('\n').filter(Boolean);
      expect(findings.filter((f) => /error while linting|^gateway_/.test(f))).to.deep.equal([]);
    } finally {
      await run.close();
      await rx.close();
    }
  });

  it('a rate limit refusal counts by kind', async () => {
    const limited = await startTestGateway({ yaml: 'limits:\n  rate:\n    key: { per_second: 1, per_minute: null, per_day: null }\n    tenant: { per_second: null, per_minute: null, per_day: null }\n    model: { per_second: null, per_minute: null, per_day: null }' });
    try {
      const { key: k } = await newTenant(limited);
      const before = await scrape(limited.metricsUrl!);
      const rs = await Promise.all([1, 2, 3].map(() => call(limited.url, 'GET', `${D}/9b2f0c1e-4a57-4c43-9d5e-6f1f4b1c2a3d`, { key: k })));
      const refusedCount = rs.filter((x) => x.status === 429).length;
      expect(refusedCount).to.be.at.least(1);
      const after = await scrape(limited.metricsUrl!);
      expect(value(after, 'gateway_limit_refusals_total', { kind: 'rate_key' }) - value(before, 'gateway_limit_refusals_total', { kind: 'rate_key' })).to.equal(refusedCount);
    } finally {
      await limited.close();
    }
  });

  it('with metrics.token and no listener, /metrics is on the API port for that bearer token only', async () => {
    const tokened = await startTestGateway({ yaml: `metrics: { port: null, token: ${TOKEN} }` });
    try {
      expect(tokened.metricsUrl).to.equal(undefined);
      const none = await call(tokened.url, 'GET', '/metrics');
      expect([none.status, none.body.error_code]).to.deep.equal([401, 1001]);
      const wrong = await call(tokened.url, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}x` } });
      expect(wrong.status).to.equal(401);
      const text = await scrape(`${tokened.url}/metrics`, { authorization: `Bearer ${TOKEN}` });
      expect(text).to.match(/^gateway_http_requests_total/m);
    } finally {
      await tokened.close();
    }
  });

  it('the opt-in tenant label is capped: tenants past the cap count as _other', async () => {
    const labelled = await startTestGateway({ yaml: 'metrics: { port: 0, tenant_label_max: 1 }' });
    try {
      const a = await newTenant(labelled);
      const b = await newTenant(labelled);
      await call(labelled.url, 'GET', '/v1/balance', { key: a.key });
      await call(labelled.url, 'GET', '/v1/balance', { key: b.key });
      const text = await scrape(labelled.metricsUrl!);
      expect(value(text, 'gateway_tenant_requests_total', { tenant: a.tenant.id })).to.equal(1);
      expect(value(text, 'gateway_tenant_requests_total', { tenant: b.tenant.id })).to.equal(0);
      expect(value(text, 'gateway_tenant_requests_total', { tenant: '_other' })).to.be.at.least(1);
    } finally {
      await labelled.close();
    }
  });

  it('a metrics port in use fails the start with the setting to change, and leaves nothing running', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const err = await startTestGateway({ yaml: `metrics: { port: ${port} }` }).then(() => undefined, (e: Error) => e);
      expect(err?.message).to.match(new RegExp(`metrics.port ${port} on 127.0.0.1 is in use`));
    } finally {
      blocker.close();
    }
  });
});

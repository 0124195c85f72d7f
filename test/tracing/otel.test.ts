// OpenTelemetry end to end: a real gateway with tracing on exports its spans over OTLP/HTTP to a
// real receiver (a node:http server reading the exporter's JSON), in front of real upstreams (an
// image tool for async tasks, an OpenAI-compatible one for chat) and an HTTPS webhook receiver.
// The spans' ids and parents are checked against the headers each party saw. With tracing off,
// nothing is ever sent to the endpoint.
import { expect } from 'chai';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import type { Gateway } from '../../engine/gateway.ts';
import { createLogger } from '../../engine/log/logger.ts';
import { tracing } from '../../engine/tracing/tracing.ts';
import { FakeOpenAI } from '../chat/fake-openai.ts';
import { call, DEMO_KEY, newTenant, ROOT, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { FakeUpstream, json, type Seen } from '../helpers/upstream.ts';
import { waitFor } from '../webhooks/support/harness.ts';
import { testPki } from '../webhooks/support/pki.ts';
import { Receiver } from '../webhooks/support/receiver.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const run = promisify(execFile);
const SERVER = 2;
const CLIENT = 3;
const INTERNAL = 1;

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
  status?: { code?: number };
}

/** An OTLP/HTTP collector: every span of every JSON export request it receives. */
class OtlpReceiver {
  readonly spans: OtlpSpan[] = [];
  requests = 0;
  readonly resources: Record<string, unknown>[] = [];
  private server?: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer(async (req, res: ServerResponse) => {
      this.requests++;
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      expect(req.url).to.equal('/v1/traces');
      expect(req.headers['content-type']).to.match(/^application\/json/);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: { resource: { attributes: { key: string; value: Record<string, unknown> }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
      };
      for (const rs of body.resourceSpans) {
        this.resources.push(Object.fromEntries(rs.resource.attributes.map((a) => [a.key, Object.values(a.value)[0]])));
        for (const ss of rs.scopeSpans) this.spans.push(...ss.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1/traces`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

function attr(span: OtlpSpan, key: string): unknown {
  const a = span.attributes.find((x) => x.key === key);
  return a ? Object.values(a.value)[0] : undefined;
}

/** An image tool upstream: a task completes on its second poll. */
function imageTool(): FakeUpstream {
  const up = new FakeUpstream();
  const polls = new Map<string, number>();
  let seq = 0;
  up.on('POST', '/mj/submit/imagine', (_req: Seen, res) => json(res, 200, { code: 1, description: 'Submit success', result: `up-${++seq}` }));
  up.on('GET', /^\/mj\/task\/[^/]+\/fetch$/, (req, res) => {
    const id = req.path.split('/')[3]!;
    const n = (polls.get(id) ?? 0) + 1;
    polls.set(id, n);
    if (n < 2) return json(res, 200, { id, status: 'IN_PROGRESS', imageUrls: null });
    json(res, 200, { id, status: 'SUCCESS', progress: '100%', imageUrls: [0, 1, 2, 3].map((i) => `https://cdn.example.com/${id}/${i}.png`) });
  });
  return up;
}

const parentOf = (traceparent: unknown) => String(traceparent).split('-')[2];
const traceOf = (traceparent: unknown) => String(traceparent).split('-')[1];

describe('OpenTelemetry tracing', function () {
  this.timeout(20_000);
  let otlp: OtlpReceiver;
  let images: FakeUpstream;
  let chat: FakeOpenAI;
  let rx: Receiver;

  before(async () => {
    otlp = await new OtlpReceiver().start();
    images = await imageTool().start();
    chat = await new FakeOpenAI().start();
    rx = await Receiver.start();
  });
  after(async () => {
    await otlp.close();
    await images.close();
    await chat.close();
    await rx.close();
  });

  const gateway = (enabled: boolean, logger?: ReturnType<typeof createLogger>) =>
    startTestGateway({
      sandbox: false,
      only: ['provider_b', 'provider_c'],
      upstreams: {
        provider_b: { base_url: images.url, credentials: { api_key: 'test-upstream-secret' } },
        provider_c: { base_url: chat.url, credentials: { api_key: 'sk-upstream-test' } },
      },
      logger,
      yaml: `webhooks: { allow_private_cidrs: ["127.0.0.1/32"], ca_pem: ${JSON.stringify([testPki().caPem])} }
tracing: { enabled: ${enabled}, otlp_endpoint: "${otlp.url}", service_name: gw-under-test, export_delay_ms: 20 }`,
    });

  it('exports the request, its steps, its upstream calls and its webhook attempts as one trace', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({ write(chunk, _enc, done) { for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l)); done(); } });
    const gw: Gateway = await gateway(true, createLogger('info', sink));
    try {
      expect(tracing).to.equal(true);
      const { key } = await newTenant(gw, { credits: 5000 });
      const ep = await call(gw.url, 'POST', '/v1/webhooks/endpoints', { key, body: { url: rx.url('/otel'), events: ['task.created', 'task.succeeded'] } });
      expect(ep.status).to.equal(201);

      // The caller's trace is continued: same trace id, our span id, its sampled flag.
      const incoming = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const created = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'a lighthouse' }, headers: { traceparent: incoming } });
      expect(created.status).to.equal(202);
      const answered = created.headers.get('traceparent')!;
      const [, traceId, serverSpanId, flags] = answered.split('-');
      expect(traceId).to.equal('4bf92f3577b34da6a3ce929d0e0e4736');
      expect(serverSpanId).to.not.equal('00f067aa0ba902b7');
      expect(flags).to.equal('01');
      const id = created.body.task_info.id;
      await waitForTask(gw.url, `${IMAGES}/${id}`, key);
      await waitFor(() => rx.requests.filter((r) => r.path === '/otel').length >= 2, 5000, 'two deliveries');

      // A chat completion, in a trace of its own.
      const chatTrace = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      const completion = await call(gw.url, 'POST', '/v1/chat/completions', { key, headers: { traceparent: chatTrace }, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] } });
      expect(completion.status).to.equal(200);
      const chatServerSpanId = parentOf(completion.headers.get('traceparent'));

      // A refused request: the problem's service code is on its span, the failed step says why.
      const refusedTrace = '00-1af7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01';
      const refused = await call(gw.url, 'POST', IMAGES, { key: 'gw_not_a_key_000000000000000000000', body: { prompt: 'x' }, headers: { traceparent: refusedTrace } });
      expect(refused.status).to.equal(401);

      const inTrace = (t: string) => otlp.spans.filter((s) => s.traceId === t);
      await waitFor(() => inTrace(traceId!).filter((s) => s.name === 'webhook deliver').length >= 2 && inTrace('0af7651916cd43dd8448eb211c80319c').some((s) => s.kind === SERVER)
        && inTrace('1af7651916cd43dd8448eb211c80319c').some((s) => s.kind === SERVER), 5000, 'the spans exported');

      const spans = inTrace(traceId!);
      const server = spans.find((s) => s.spanId === serverSpanId)!;
      expect(server, 'the server span').to.exist;
      expect(server.kind).to.equal(SERVER);
      expect(server.parentSpanId).to.equal('00f067aa0ba902b7');
      expect(server.name).to.equal(`POST ${IMAGES}`);
      expect(attr(server, 'http.request.method')).to.equal('POST');
      expect(attr(server, 'http.route')).to.equal(IMAGES);
      expect(Number(attr(server, 'http.response.status_code'))).to.equal(202);
      expect(otlp.resources[0]).to.include({ 'service.name': 'gw-under-test' });

      const child = (name: string) => spans.filter((s) => s.name === name);
      for (const name of ['auth', 'validation', 'store tasks.create']) {
        expect(child(name), name).to.have.length(1);
        expect(child(name)[0]!.parentSpanId, name).to.equal(serverSpanId);
        expect(child(name)[0]!.kind, name).to.equal(INTERNAL);
      }
      expect(attr(child('store tasks.create')[0]!, 'db.operation.name')).to.equal('tasks.create');

      // Upstream calls after the answer join the creating request's trace; the provider saw
      // the CLIENT span's own id as its parent.
      // (At this test's time scale the sweep may submit a second time: every call is checked.)
      const submits = child('upstream submit');
      expect(submits.length).to.be.at.least(1);
      const submitted = images.seen.filter((r) => r.path === '/mj/submit/imagine');
      expect(submitted.map((r) => traceOf(r.headers.traceparent))).to.deep.equal(submitted.map(() => traceId));
      expect(submitted.map((r) => parentOf(r.headers.traceparent)).sort()).to.deep.equal(submits.map((s) => s.spanId).sort());
      const polls = child('upstream poll');
      expect(polls.length).to.be.at.least(2);
      const fetches = images.seen.filter((r) => r.path.endsWith('/fetch'));
      expect(fetches.map((r) => parentOf(r.headers.traceparent)).sort()).to.deep.equal(polls.map((s) => s.spanId).sort());
      for (const c of [...submits, ...polls]) {
        expect(c.kind).to.equal(CLIENT);
        expect(c.parentSpanId).to.equal(serverSpanId);
        expect(attr(c, 'server.address')).to.equal('127.0.0.1');
      }

      // Each webhook attempt is a CLIENT span of the task's trace, whose traceparent the receiver got.
      const attempts = child('webhook deliver');
      expect(attempts).to.have.length(2);
      const deliveries = rx.requests.filter((r) => r.path === '/otel');
      expect(deliveries.map((r) => traceOf(r.headers.traceparent))).to.deep.equal([traceId, traceId]);
      expect(deliveries.map((r) => parentOf(r.headers.traceparent)).sort()).to.deep.equal(attempts.map((s) => s.spanId).sort());
      for (const a of attempts) {
        expect(a.kind).to.equal(CLIENT);
        expect(a.parentSpanId).to.equal(serverSpanId);
        expect(Number(attr(a, 'http.response.status_code'))).to.equal(200);
      }

      // A task read: its store call is a child of its own server span.
      const reads = otlp.spans.filter((s) => s.kind === SERVER && s.name === `GET ${IMAGES}/:task_id`);
      expect(reads.length).to.be.at.least(1);
      const got = otlp.spans.find((s) => s.name === 'store tasks.get' && s.parentSpanId === reads[0]!.spanId);
      expect(got, 'a store tasks.get under a read').to.exist;

      // The chat: its upstream exchange is a CLIENT span whose id the upstream saw as its parent.
      const chatSpans = inTrace('0af7651916cd43dd8448eb211c80319c');
      const chatServer = chatSpans.find((s) => s.kind === SERVER)!;
      expect(chatServer.spanId).to.equal(chatServerSpanId);
      expect(chatServer.parentSpanId).to.equal('b7ad6b7169203331');
      expect(chatServer.name).to.equal('POST /v1/chat/completions');
      const proxy = chatSpans.find((s) => s.name === 'upstream proxy')!;
      expect(proxy.kind).to.equal(CLIENT);
      expect(proxy.parentSpanId).to.equal(chatServerSpanId);
      expect(chatSpans.filter((s) => s.parentSpanId === chatServerSpanId).map((s) => s.name).sort()).to.deep.equal(['auth', 'upstream proxy', 'validation']);
      const upstreamSaw = chat.seen.find((r) => r.path === '/v1/chat/completions')!;
      expect(upstreamSaw.headers.traceparent).to.equal(`00-0af7651916cd43dd8448eb211c80319c-${proxy.spanId}-01`);

      const refusedServer = inTrace('1af7651916cd43dd8448eb211c80319c').find((s) => s.kind === SERVER)!;
      expect(Number(attr(refusedServer, 'gateway.error_code'))).to.equal(1001);
      expect(Number(attr(refusedServer, 'http.response.status_code'))).to.equal(401);
      const refusedAuth = inTrace('1af7651916cd43dd8448eb211c80319c').find((s) => s.name === 'auth')!;
      expect(refusedAuth.parentSpanId).to.equal(refusedServer.spanId);
      expect(refusedAuth.status?.code).to.equal(2); // ERROR
      expect(attr(refusedAuth, 'error.type')).to.equal('1001');

      // Log lines written inside a request carry its trace and span ids.
      const access = lines.find((l) => l.msg === 'request' && l.trace_id === traceId && l.method === 'POST');
      expect(access, 'the create access line').to.exist;
      expect(access!.span_id).to.equal(serverSpanId);
      const chatAccess = lines.find((l) => l.msg === 'request' && l.trace_id === '0af7651916cd43dd8448eb211c80319c');
      expect(chatAccess!.span_id).to.equal(chatServerSpanId);
      const control = lines.find((l) => l.msg === 'request' && l.path === '/v1/webhooks/endpoints');
      expect(control!.span_id).to.match(/^[0-9a-f]{16}$/);
    } finally {
      await gw.close();
    }
    expect(tracing).to.equal(false);
  });

  it('sends nothing to the endpoint when tracing is off, and keeps today\'s trace header', async () => {
    const before = otlp.requests;
    const gw = await gateway(false);
    try {
      expect(tracing).to.equal(false);
      const { key } = await newTenant(gw, { credits: 5000 });
      const incoming = '00-5bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const created = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'a quiet harbour' }, headers: { traceparent: incoming } });
      expect(created.status).to.equal(202);
      const answered = created.headers.get('traceparent')!;
      expect(traceOf(answered)).to.equal('5bf92f3577b34da6a3ce929d0e0e4736');
      await waitForTask(gw.url, `${IMAGES}/${created.body.task_info.id}`, key);
      // Upstream calls carry the request's own traceparent, as before tracing existed.
      expect(images.seen.filter((r) => traceOf(r.headers.traceparent) === '5bf92f3577b34da6a3ce929d0e0e4736').map((r) => r.headers.traceparent)).to.include(answered);
      const completion = await call(gw.url, 'POST', '/v1/chat/completions', { key, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] } });
      expect(completion.status).to.equal(200);
      expect(chat.seen.at(-1)!.headers.traceparent).to.equal(completion.headers.get('traceparent'));
      await new Promise((r) => setTimeout(r, 200)); // ten export delays of the traced gateway
    } finally {
      await gw.close();
    }
    expect(otlp.requests).to.equal(before);
  });

  it('does not even load the SDK when tracing is off', async () => {
    // A process of its own: this one has loaded the SDK for the tests above.
    const script = `
      const { loadConfigText } = await import(${JSON.stringify(`${ROOT}engine/load-config.ts`)});
      const { startGateway } = await import(${JSON.stringify(`${ROOT}engine/gateway.ts`)});
      const { createLogger } = await import(${JSON.stringify(`${ROOT}engine/log/logger.ts`)});
      const config = loadConfigText('server: { host: 127.0.0.1, port: 0 }\\nsandbox: { enabled: true, demo_api_key: ${DEMO_KEY} }\\nmetrics: { enabled: false }\\ntracing: { enabled: false }\\nvendors: { enabled: [provider_c] }\\n', ${JSON.stringify(ROOT)}, { env: {} });
      const gw = await startGateway(config, { logger: createLogger('silent') });
      const r = await fetch(gw.url + '/v1/models', { headers: { authorization: 'Bearer ${DEMO_KEY}' } });
      await gw.close();
      const { createRequire } = await import('node:module');
      const loaded = Object.keys(createRequire(${JSON.stringify(`${ROOT}package.json`)}).cache).filter((k) => k.includes('@opentelemetry/') && !k.includes('@opentelemetry/api/') && !k.includes('@opentelemetry/semantic-conventions/'));
      console.log(JSON.stringify({ status: r.status, loaded }));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).to.deep.equal({ status: 200, loaded: [] });
  });
});

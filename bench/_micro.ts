import { readdirSync, openSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { loadConfigText } from '../engine/config/load-config.ts';
import { startGateway } from '../engine/gateway.ts';
import { continueTrace } from '../engine/http/traceparent.ts';
import { createLogger } from '../engine/log/logger.ts';
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const others = readdirSync(`${ROOT}vendors`).filter((f) => f.endsWith('.yaml') && f !== 'provider_c.yaml').map((f) => f.slice(0, -5));
const big = { per_second: 1e9, per_minute: 1e9, per_day: 1e9 };
const config = loadConfigText(`
server: { host: 127.0.0.1, port: 0 }
sandbox: { enabled: false }
log: { level: silent }
vendors: { dir: vendors, disabled: ${JSON.stringify(others)} }
limits: ${JSON.stringify({ rate: { key: big, tenant: big, model: big }, daily_spend_credits: '1000000000.00' })}
upstreams: { provider_c: { base_url: "http://127.0.0.1:9", credentials: { api_key: sk-bench } } }
`, ROOT, { env: {} });
const gw = await startGateway(config);
const tenant = await gw.tenants.createTenant({ name: 'bench' });
const { key, record } = await gw.tenants.issueKey(tenant.id, {});
await gw.billing.topUp(tenant.id, 1_000_000_000_000, 'bench-topup');
const route = gw.proxy.routes.find((r) => r.kind === 'stream')!;
const body = Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'You are a concise assistant. Answer in one short paragraph.' }, { role: 'user', content: 'Explain in two sentences why the sky looks blue during the day and red at sunset.' }], temperature: 0.7, max_completion_tokens: 200 }));
const resp = Buffer.from(JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion', created: 1700000000, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'The quick brown fox jumps over the lazy dog. '.repeat(4), refusal: null, annotations: [] }, logprobs: null, finish_reason: 'stop' }], usage: { prompt_tokens: 27, completion_tokens: 40, total_tokens: 67, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 } } }));
const logger = createLogger('info', pino.destination({ dest: openSync('/dev/null', 'w'), sync: true }));
const loggerAsync = createLogger('info', pino.destination({ dest: openSync('/dev/null', 'w'), sync: false, minLength: 4096 }));
const N = 20000;
async function time(name: string, fn: (i: number) => unknown) {
  for (let i = 0; i < 2000; i++) await fn(i);
  const t0 = process.cpuUsage();
  for (let i = 0; i < N; i++) await fn(i);
  const t = process.cpuUsage(t0);
  console.log(name.padEnd(28), ((t.user + t.system) / N).toFixed(2), 'µs');
}
const auth = `Bearer ${key}`;
await time('continueTrace', () => continueTrace(undefined));
await time('authenticate', () => gw.tenants.authenticate(auth));
await time('JSON.parse body', () => JSON.parse(body.toString()));
await time('validate', () => route.validate!(JSON.parse(body.toString())));
await time('limits.checkRequest', () => gw.limits.checkRequest({ tenantId: tenant.id, keyId: record.id, model: 'gpt-4o-mini' }));
await time('limits.checkSpend', () => gw.limits.checkSpend(tenant.id));
await time('billing.ensureCanSpend', () => gw.billing.ensureCanSpend(tenant.id));
await time('billing.charge', (i) => gw.billing.charge(tenant.id, `ref-${i}-${Math.random()}`, 44, 'gpt-4o-mini 27 in (0 cached) 40 out chatcmpl-bench'));
await time('JSON.parse response', () => JSON.parse(resp.toString()));
const line = { trace_id: 'a'.repeat(32), method: 'POST', route: 'provider_c/chat_completions', path: '/v1/chat/completions', status: 200, latency_ms: 1.234, gateway_ms: 0.123, tenant_id: tenant.id, model: 'gpt-4o-mini', outcome: 'ok', usage: { input: 27, output: 40, cached: 0, estimated: false }, charged_milli: 44 };
const flat = { trace_id: 'a'.repeat(32), method: 'POST', route: 'provider_c/chat_completions', path: '/v1/chat/completions', status: 200, latency_ms: 1.234, gateway_ms: 0.123, tenant_id: tenant.id, model: 'gpt-4o-mini', outcome: 'ok', tokens_in: 27, tokens_out: 40, charged_milli: 44 };
await time('log nested (sync)', () => logger.info(line, 'request'));
await time('log flat (sync)', () => logger.info(flat, 'request'));
await time('log flat (async dest)', () => loggerAsync.info(flat, 'request'));
const plain = pino({ base: { service: 'x' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: openSync('/dev/null', 'w'), sync: true }));
await time('log flat (no redact)', () => plain.info(flat, 'request'));
await gw.close();

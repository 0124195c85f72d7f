// The gateway under benchmark, run as a child process by bench/chat.ts (pinned to one core):
// the full path — auth, validation, rate limits, billing, access log (info, to /dev/null) —
// with provider_c's upstream at UPSTREAM_URL and every other vendor switched off. On the memory
// store, or with BENCH_REDIS_URL on that Redis (a key prefix of its own per process), so that
// bench/compare.ts can set the two stores of one tree side by side:
//   npx node bench/compare.ts chat <tree> <tree>+BENCH_REDIS_URL=redis://127.0.0.1:6390
//
// The engine runs compiled, as it ships (dist/, bench/support.ts's shipped()).
import { PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { ChatPorts } from '../engine/gateway.ts';
import { chatConfigText } from './chat-config.ts';
import { shipped } from './support.ts';

const { loadConfigText } = await shipped<typeof import('../engine/load-config.ts')>('load-config.ts');
const { startGateway } = await shipped<typeof import('../engine/gateway.ts')>('gateway.ts');

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const config = loadConfigText(chatConfigText({
  upstreamUrl: process.env.UPSTREAM_URL!,
  logLevel: 'info',
  store: process.env.BENCH_REDIS_URL ? `store: { kind: redis, redis_url: "${process.env.BENCH_REDIS_URL}", key_prefix: "bench${process.pid}" }` : undefined,
}), ROOT, { env: {} });
// Diagnostic runs only: the proxy path without billing, limits and the access log, to show
// where the full path's CPU goes. `core` is switched back before the next full-path run.
// BENCH_CORE=1 starts the gateway switched off so; BENCH_OFF=billing,limits,log switches the
// steps named off for the whole run, to weigh one at a time:
//   bench/compare.ts chat <tree> <tree>+BENCH_OFF=billing <tree>+BENCH_CORE=1
let core = process.env.BENCH_CORE === '1';
const off = new Set(process.env.BENCH_OFF?.split(','));
const limitsOff = () => core || off.has('limits');
const billingOff = () => core || off.has('billing');
const chatPorts = (real: ChatPorts): ChatPorts => ({
  limits: {
    checkRequest: (who, known) => (limitsOff() ? Promise.resolve() : real.limits.checkRequest(who, known)),
    checkPriced: (who, known, hold) => (limitsOff() ? hold() : real.limits.checkPriced(who, known, hold)),
    limitsOf: (t, model) => real.limits.limitsOf(t, model),
  },
  billing: { reserve: (t, r, milli, n) => (billingOff() ? Promise.resolve(milli) : real.billing.reserve(t, r, milli, n)), close: (...a) => (billingOff() ? Promise.resolve() : real.billing.close(...a)) },
});
const gw = await startGateway(config, { chatPorts });
const logLevel = () => (core || off.has('log') ? 'silent' : 'info');
gw.accessLog.level = logLevel();
const tenant = await gw.tenants.createTenant({ name: 'bench' });
const { key } = await gw.tenants.issueKey(tenant.id, {});
await gw.billing.topUp(tenant.id, 1_000_000_000_000, 'bench-topup');
// BENCH_V8_FLAGS: V8 flags set once the gateway is up (v8.setFlagsFromString, commas for spaces),
// as the gateway could set them itself: bench/compare.ts <tree> '<tree>+BENCH_V8_FLAGS=--heap-growing-percent=20'.
if (process.env.BENCH_V8_FLAGS) (await import('node:v8')).setFlagsFromString(process.env.BENCH_V8_FLAGS.replaceAll(',', ' '));
// The collections since the last ask (bench/chat.ts's fixed-rate windows): a pause stops every
// request in flight, so these are the load-independent side of a tail (kind: V8's, 1 minor, 4 major).
const gcs: [kind: number, ms: number][] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (gcs.length < 100_000) gcs.push([(e as unknown as { detail: { kind: number } }).detail.kind, e.duration]);
}).observe({ entryTypes: ['gc'] });
process.send!({ url: gw.url, key });
process.on('message', (m: { cpu?: boolean; core?: boolean; gc?: boolean }) => {
  if (m.cpu) process.send!({ cpu: process.cpuUsage() });
  if (m.gc) process.send!({ gc: gcs.splice(0) });
  if (m.core !== undefined) {
    core = m.core;
    gw.accessLog.level = logLevel();
    process.send!({ ok: true });
  }
});
process.on('disconnect', () => void gw.close().then(() => process.exit(0)));

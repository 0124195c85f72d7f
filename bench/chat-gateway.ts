// The gateway under benchmark, run as a child process by bench/chat.ts (pinned to one core):
// the full path — auth, validation, rate limits, billing, access log (info, to /dev/null) —
// with provider_c's upstream at UPSTREAM_URL and every other vendor switched off.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadConfigText } from '../engine/config/load-config.ts';
import pino from 'pino';
import { startGateway } from '../engine/gateway.ts';
import { createLogger } from '../engine/log/logger.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const others = readdirSync(`${ROOT}vendors`).filter((f) => f.endsWith('.yaml') && f !== 'provider_c.yaml').map((f) => f.slice(0, -5));
const big = { per_second: 1_000_000_000, per_minute: 1_000_000_000, per_day: 1_000_000_000 };
const config = loadConfigText(`
server: { host: 127.0.0.1, port: 0 }
sandbox: { enabled: false }
log: { level: ${process.env.BENCH_LOG ?? 'info'} }
vendors: { dir: vendors, disabled: ${JSON.stringify(others)} }
limits: ${JSON.stringify({ rate: { key: big, tenant: big, model: big }, daily_spend_credits: '1000000000.00' })}
upstreams: { provider_c: { base_url: "${process.env.UPSTREAM_URL}", credentials: { api_key: sk-bench } } }
`, ROOT, { env: {} });
// BENCH_LOGDEST=sync|buffered: investigation only — the reported run uses the engine's logger as it is.
const dest = process.env.BENCH_LOGDEST;
const logger = dest ? createLogger(config.log.level, pino.destination({ dest: 1, sync: dest === 'sync', ...(dest === 'buffered' ? { minLength: 4096 } : {}) })) : undefined;
const gw = await startGateway(config, logger ? { logger } : {});
const tenant = await gw.tenants.createTenant({ name: 'bench' });
const { key } = await gw.tenants.issueKey(tenant.id, {});
await gw.billing.topUp(tenant.id, 1_000_000_000_000, 'bench-topup');
// Ablations for investigation only (never in the reported run): BENCH_ABLATE=nobilling,nolimits
const ablate = (process.env.BENCH_ABLATE ?? '').split(',');
if (ablate.includes('nobilling')) gw.proxy.billing = { ensureCanSpend: async () => {}, charge: async () => undefined };
if (ablate.includes('nolimits')) gw.proxy.limits = { checkRequest: async () => {}, checkSpend: async () => {} };
process.send!({ url: gw.url, key });
process.on('message', (m: { cpu?: boolean }) => {
  if (m.cpu) process.send!({ cpu: process.cpuUsage() });
});
process.on('disconnect', () => void gw.close().then(() => process.exit(0)));

// The gateway under benchmark, run as a child process by bench/chat.ts (pinned to one core):
// the full path — auth, validation, rate limits, billing, access log (info, to /dev/null) —
// with provider_c's upstream at UPSTREAM_URL and every other vendor switched off.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadConfigText } from '../engine/load-config.ts';
import { startGateway } from '../engine/gateway.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const others = readdirSync(`${ROOT}vendors`).filter((f) => f.endsWith('.yaml') && f !== 'provider_c.yaml').map((f) => f.slice(0, -5));
const big = { per_second: 1_000_000_000, per_minute: 1_000_000_000, per_day: 1_000_000_000 };
const config = loadConfigText(`
server: { host: 127.0.0.1, port: 0 }
metrics: { port: 0 }
sandbox: { enabled: false }
log: { level: info }
vendors: { dir: vendors, disabled: ${JSON.stringify(others)} }
limits: ${JSON.stringify({ rate: { key: big, tenant: big, model: big }, daily_spend_credits: '1000000000.00' })}
upstreams: { provider_c: { base_url: "${process.env.UPSTREAM_URL}", credentials: { api_key: sk-bench } } }
`, ROOT, { env: {} });
const gw = await startGateway(config);
const tenant = await gw.tenants.createTenant({ name: 'bench' });
const { key } = await gw.tenants.issueKey(tenant.id, {});
await gw.billing.topUp(tenant.id, 1_000_000_000_000, 'bench-topup');
process.send!({ url: gw.url, key });
process.on('message', (m: { cpu?: boolean; core?: boolean }) => {
  if (m.cpu) process.send!({ cpu: process.cpuUsage() });
  // Diagnostic runs only: the proxy path without billing, limits and the access log, to show
  // where the full path's CPU goes. Switched back before the next full-path run.
  if (m.core !== undefined) {
    gw.proxy.billing = m.core ? { ensureCanSpend: async () => {}, charge: async () => undefined } : gw.billing;
    gw.proxy.limits = m.core ? { checkRequest: async () => {}, checkSpend: async () => {} } : gw.limits;
    gw.proxy.accessLog.level = m.core ? 'silent' : 'info';
    process.send!({ ok: true });
  }
});
process.on('disconnect', () => void gw.close().then(() => process.exit(0)));

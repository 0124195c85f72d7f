// The gateway of bench/webhooks.ts: memory store, sandbox on, webhooks allowed to the local
// receiver (its test CA trusted), per-endpoint rate limit lifted so the pool's speed shows.
// Over IPC: `setup` registers endpoints, `burst` publishes events (one delivery per endpoint each).
import { loadConfigText } from '../engine/load-config.ts';
import { startGateway } from '../engine/gateway.ts';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const config = loadConfigText(`
server: { host: 127.0.0.1, port: 0 }
metrics: { port: 0 }
sandbox: { enabled: true, demo_api_key: gw_test_bench_webhooks_key_0000000 }
log: { level: warn }
limits:
  rate:
    key: { per_second: null, per_minute: null, per_day: null }
    tenant: { per_second: null, per_minute: null, per_day: null }
    model: { per_second: null, per_minute: null, per_day: null }
webhooks: { allow_private_cidrs: ["127.0.0.1/32"], ca_pem: ${JSON.stringify([process.env.RECEIVER_CA!])}, rate_limit_per_minute: 10000000 }
`, ROOT, { env: {} });
const gw = await startGateway(config);
const tenant = await gw.tenants.createTenant({ name: 'bench' });
const { key } = await gw.tenants.issueKey(tenant.id, {});

process.on('message', async (m: { cmd: string; url?: string; endpoints?: number; events?: number }) => {
  if (m.cmd === 'setup') {
    for (let i = 0; i < m.endpoints!; i++) await gw.webhooks.endpoints.create(tenant.id, { url: `${m.url}?e=${i}`, events: ['task.succeeded'] });
    process.send!({ cmd: 'setup' });
  } else if (m.cmd === 'burst') {
    for (let i = 0; i < m.events!; i++) {
      await gw.bus.emit(tenant.id, 'task.succeeded', {
        vendor: 'provider_b', model_name: 'diffusion',
        payload: { task_info: { id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, status: 'completed', created_at: new Date().toISOString(), updated_at: new Date().toISOString() }, images: ['https://cdn.example.com/0.png'] },
      });
    }
    process.send!({ cmd: 'burst' });
  } else if (m.cmd === 'stop') {
    await gw.close();
    process.exit(0);
  }
});
process.send!({ cmd: 'ready', url: gw.url, key });

// The gateway under bench/result-copy.ts (a child process, so its RSS is its own): model E
// against UPSTREAM_URL, the result store on RESULTS_BACKEND (local in RESULTS_DIR, or s3 at
// S3_ENDPOINT), memory store, quiet logs. Over IPC it reports its URL, API key and pid.
import { fileURLToPath } from 'node:url';
import { loadConfigText } from '../engine/load-config.ts';
import { startGateway } from '../engine/gateway.ts';
import { NO_LIMITS } from '../test/helpers/gateway.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const store = process.env.RESULTS_BACKEND === 's3'
  ? `store: s3, s3: { bucket: ${process.env.S3_BUCKET}, endpoint: "${process.env.S3_ENDPOINT}", force_path_style: true, access_key_id: S3RVER, secret_access_key: S3RVER }`
  : `store: local, local: { dir: "${process.env.RESULTS_DIR}" }`;
const config = loadConfigText(`
server: { host: 127.0.0.1, port: 0 }
metrics: { port: 0 }
store: { kind: memory }
sandbox: { enabled: false }
log: { level: warn }
timing: { scale: 0.1 }
vendors: { dir: vendors, enabled: [provider_e] }
${NO_LIMITS}
upstreams:
  provider_e: { base_url: "${process.env.UPSTREAM_URL}", credentials: { api_key: bench } }
results: { ${store}, allow_private_cidrs: ["127.0.0.1/32"], max_file_bytes: 1073741824 }
`, ROOT, { env: {} });
const gw = await startGateway(config);
const tenant = await gw.tenants.createTenant({ name: 'bench' });
const { key } = await gw.tenants.issueKey(tenant.id, {});
await gw.billing.topUp(tenant.id, 1_000_000_000_000, 'bench-topup');
process.send!({ cmd: 'ready', url: gw.url, key, pid: process.pid });
process.on('message', async (m: { cmd: string }) => {
  if (m.cmd !== 'stop') return;
  await gw.close();
  process.exit(0);
});

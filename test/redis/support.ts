// Gateway processes for the multi-process and crash tests: each is a real `gateway serve`
// child process on Redis, with its own role and port, stopped (or killed) by the test.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NO_LIMITS, ROOT } from '../helpers/gateway.ts';
import { freePort } from '../helpers/net.ts';

export { freePort };

export const ADMIN = 'mp-admin-token';

export interface ConfigOptions {
  redisUrl: string;
  /** A Redis Cluster's nodes (store.redis_cluster_nodes); then redisUrl is not used. */
  clusterNodes?: string[];
  prefix: string;
  upstreamUrl: string;
  caPem?: string;
  scale?: number;
  /** provider_b as a pool of these members (upstream pools) instead of upstreamUrl alone. */
  members?: { id: string; url: string }[];
  /** Video model A's upstream too (provider_a), for tests of uploaded media. */
  modelAUrl?: string;
  /** Chat (provider_c) too, proxied to this upstream. */
  chatUrl?: string;
  /** The API key provider_c's upstream expects (default mp-secret). */
  chatKey?: string;
  /** The descriptors' folder (default the repository's vendors/). */
  vendorsDir?: string;
  /** More `timing:` settings, as YAML flow-mapping entries (e.g. `sweep_grace_ms: 3000000`). */
  timing?: string;
  /** server.shutdown_grace_ms (default 2000). */
  graceMs?: number;
  /** The `results:` mapping (default: off, the providers' URLs pass through). */
  results?: string;
  /** Model D (provider_d) too, its upstream at this URL. */
  providerDUrl?: string;
  /** server.public_base_url (push callbacks on for routes that declare one). */
  publicBaseUrl?: string;
}

/** A config file for processes sharing one Redis; provider_b only, its upstream a test server. */
export function writeConfig(o: ConfigOptions): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-mp-'));
  const enabled = [...(o.modelAUrl ? ['provider_a'] : []), 'provider_b', ...(o.chatUrl ? ['provider_c'] : []), ...(o.providerDUrl ? ['provider_d'] : [])];
  const file = join(dir, 'config.yaml');
  writeFileSync(file, `
server: { host: 127.0.0.1, port: 0, shutdown_grace_ms: ${o.graceMs ?? 2000}${o.publicBaseUrl ? `, public_base_url: "${o.publicBaseUrl}"` : ''} }
store: { kind: redis, redis_url: "${o.redisUrl}",${o.clusterNodes ? ` redis_cluster_nodes: ${JSON.stringify(o.clusterNodes)},` : ''} key_prefix: "${o.prefix}", job_lock_ms: 30000 }
sandbox: { enabled: false }
admin: { token: ${ADMIN} }
timing: { scale: ${o.scale ?? 0.01}, poll_error_limit: 5${o.timing ? `, ${o.timing}` : ''} }
log: { level: info }
vendors: { dir: ${JSON.stringify(o.vendorsDir ?? join(ROOT, 'vendors'))}, enabled: ${JSON.stringify(enabled)} }
upstreams:
  provider_b: ${o.members ? `{ timeout_ms: 5000, members: ${JSON.stringify(o.members.map((m) => ({ id: m.id, base_url: m.url, credentials: { api_key: 'mp-secret' } })))}, breaker: { failures: 3, cooldown_ms: 600000 } }` : `{ base_url: "${o.upstreamUrl}", credentials: { api_key: mp-secret }, timeout_ms: 5000 }`}
  provider_a: { base_url: "${o.modelAUrl ?? o.upstreamUrl}", credentials: { api_key: mp-secret }, timeout_ms: 5000 }
${o.chatUrl ? `  provider_c: { base_url: "${o.chatUrl}", credentials: { api_key: ${o.chatKey ?? 'mp-secret'} }, timeout_ms: 5000 }\n` : ''}${o.providerDUrl ? `  provider_d: { base_url: "${o.providerDUrl}", credentials: { api_key: sk-d-upstream }, timeout_ms: 5000 }\n` : ''}${NO_LIMITS}
metrics: { port: 0 }
webhooks: { allow_private_cidrs: ["127.0.0.1/32"], ca_pem: ${JSON.stringify(o.caPem ? [o.caPem] : [])} }
results: ${o.results ?? '{ store: off }'}
`);
  return file;
}

export interface GatewayProcess {
  proc: ChildProcess;
  url: string;
  role: string;
  output(): string;
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
  kill9(): Promise<void>;
}

/** `env` adds to (or, with `undefined`, removes from) the test's own environment. */
export async function spawnGateway(config: string, role: 'all' | 'api' | 'worker', port?: number, env: Record<string, string | undefined> = {}): Promise<GatewayProcess> {
  const p = port ?? (await freePort());
  const proc = spawn(process.execPath, [join(ROOT, 'engine/cli/main.ts'), 'serve', '--config', config, '--role', role], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(p), ...env }, // spawn leaves out undefined values
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const ready = role === 'worker' ? 'gateway worker running' : 'gateway listening';
  // Up to 60 s: two gateways starting at once on a loaded 2-core machine took over 15 s (the
  // bound before) to print anything.
  for (const deadline = Date.now() + 60_000; !out.includes(ready);) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill('SIGKILL'); // nothing else holds it: a gateway stuck at start-up would outlive the test
      throw new Error(`gateway ${role} did not start:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    proc,
    role,
    url: `http://127.0.0.1:${p}`,
    output: () => out,
    stop: async () => {
      proc.kill('SIGTERM');
      return exited;
    },
    kill9: async () => {
      proc.kill('SIGKILL');
      await exited;
    },
  };
}

export async function admin(base: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** A tenant with a key and credits, made through the admin API of one process. */
export async function tenantWithKey(base: string, credits = '100000.00'): Promise<{ tenantId: string; key: string }> {
  const t = await admin(base, 'POST', '/tenants', { name: 'mp' });
  const k = await admin(base, 'POST', `/tenants/${t.id}/keys`, {});
  await admin(base, 'POST', `/tenants/${t.id}/wallet/topups`, { credits });
  return { tenantId: t.id, key: k.key };
}

export interface LedgerLine {
  ref: string;
  kind: string;
  amount_milli: number;
}

/** A tenant's whole ledger (every page), newest first, through the admin API. */
export async function ledger(base: string, tenantId: string): Promise<LedgerLine[]> {
  const out: LedgerLine[] = [];
  for (let cursor: string | null = null; ; ) {
    const page: { data: LedgerLine[]; next_cursor: string | null } = await admin(base, 'GET', `/tenants/${tenantId}/wallet/ledger?limit=200${cursor ? `&cursor=${cursor}` : ''}`);
    out.push(...page.data);
    if (!page.next_cursor) return out;
    cursor = page.next_cursor;
  }
}

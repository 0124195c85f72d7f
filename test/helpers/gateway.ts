// Starts real listening gateways for tests: loopback, port 0, quiet logs, time scaled down.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { fileURLToPath } from 'node:url';
import { loadConfigText } from '../../engine/load-config.ts';
import { startGateway, type Gateway, type GatewayOptions } from '../../engine/gateway.ts';
import { createLogger } from '../../engine/log/logger.ts';
import { descriptorNames } from '../../engine/descriptors/load-descriptors.ts';
import { waitFor } from './wait.ts';
import { NO_LIMITS } from './no-limits.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const DEMO_KEY = 'gw_test_demo_key_for_tests_0000000000';

/** The vendors the shipped config.yaml enables (the six stand-ins). */
export const SHIPPED_ENABLED: string[] = parse(readFileSync(`${ROOT}config.yaml`, 'utf8')).vendors.enabled;

let gateways = 0;

/** memory, or (GATEWAY_TEST_STORE=redis) the run's redis-server with a prefix of this gateway's own. */
function storeYaml(): string {
  const url = process.env.GATEWAY_TEST_REDIS_URL;
  if (process.env.GATEWAY_TEST_STORE !== 'redis') return '{ kind: memory }';
  if (!url) throw new Error('GATEWAY_TEST_STORE=redis needs the root hooks of test/helpers/store-mode.ts');
  return `{ kind: redis, redis_url: "${url}", key_prefix: "t${process.pid}g${++gateways}" }`;
}

export const STORE_MODE = process.env.GATEWAY_TEST_STORE === 'redis' ? 'redis' : 'memory';

export { NO_LIMITS };

/**
 * Tests that are not about credential guessing send many wrong credentials from one address:
 * the failed-authentication throttle is off unless a test sets `failed_auth` in `server`.
 */
export const NO_AUTH_THROTTLE = 'failed_auth: { limit: 0 }';

export interface TestGatewayOptions extends GatewayOptions {
  /** Extra YAML appended to the base config (top-level sections must not repeat base ones). */
  yaml?: string;
  vendorsDir?: string;
  /** Serve only these vendors of the folder (`vendors.enabled`; default: config.yaml's list for
   *  the repository's folder, which leaves the catalogue out, and every descriptor of another folder). */
  only?: string[];
  sandbox?: boolean;
  scale?: number;
  adminToken?: string;
  env?: Record<string, string>;
  upstreams?: Record<string, { base_url?: string; credentials?: Record<string, string>; timeout_ms?: number; members?: { id: string; base_url: string; credentials?: Record<string, string>; weight?: number; timeout_ms?: number }[]; breaker?: { failures?: number; cooldown_ms?: number } }>;
  /** More `server:` settings, as YAML flow-mapping entries (e.g. `headers_timeout_ms: 300`). */
  server?: string;
  /** More `timing:` settings, as YAML flow-mapping entries (e.g. `sweep_grace_ms: 600000`). */
  timing?: string;
  /** The whole `store:` mapping instead of the run's (e.g. a Redis of the test's own, to kill). */
  store?: string;
}

export async function startTestGateway(o: TestGatewayOptions = {}): Promise<Gateway> {
  const vendorsDir = o.vendorsDir ?? `${ROOT}vendors`;
  const enabled = o.only ?? (vendorsDir === `${ROOT}vendors` ? SHIPPED_ENABLED : descriptorNames(vendorsDir));
  const yaml = `
server: { host: 127.0.0.1, port: 0, shutdown_grace_ms: 2000${o.server?.includes('failed_auth') ? '' : `, ${NO_AUTH_THROTTLE}`}${o.server ? `, ${o.server}` : ''} }
store: ${o.store ?? storeYaml()}
sandbox: { enabled: ${o.sandbox ?? true}, demo_api_key: ${DEMO_KEY}, queued_ms: 1000, running_ms: 3000 }
admin: { token: "${o.adminToken ?? 'test-admin-token'}" }
timing: { scale: ${o.scale ?? 0.001}, poll_error_limit: 3${o.timing ? `, ${o.timing}` : ''} }
log: { level: silent }
vendors: { dir: ${JSON.stringify(vendorsDir)}, enabled: ${JSON.stringify(enabled)} }
upstreams: ${JSON.stringify(o.upstreams ?? {})}
${(o.yaml ?? '').match(/^limits:/m) ? '' : NO_LIMITS}
${(o.yaml ?? '').match(/^metrics:/m) ? '' : 'metrics: { port: 0 }'}
${(o.yaml ?? '').match(/^results:/m) ? '' : '# Tests not about the result store keep the providers\' URLs (docs/results.md).\nresults: { store: off }'}
${o.yaml ?? ''}`;
  const config = loadConfigText(yaml, ROOT, { env: o.env ?? {} });
  return startGateway(config, { logger: o.logger ?? createLogger('silent'), ...o });
}

export interface CallResult {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** fetch with JSON in and out; `key` becomes a bearer header. */
export async function call(base: string, method: string, path: string, opts: { key?: string; body?: unknown; headers?: Record<string, string>; raw?: string } = {}): Promise<CallResult> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  let body: string | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${base}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** Poll a task's GET until it is terminal (or `want`), failing after `timeoutMs`. */
export async function waitForTask(base: string, path: string, key: string, want: readonly string[] = ['completed', 'failed'], timeoutMs = 10_000): Promise<CallResult> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await call(base, 'GET', path, { key });
    if (r.status !== 200) throw new Error(`GET ${path} answered ${r.status}: ${r.text}`);
    if (want.includes(r.body.task_info.status)) return r;
    if (Date.now() > deadline) throw new Error(`task ${path} still ${r.body.task_info.status} after ${timeoutMs} ms`);
    await new Promise((res) => setTimeout(res, 5));
  }
}

/**
 * A task's side effects (settle or release, its task.succeeded/failed event) follow its terminal
 * status, so a client can see `completed` a moment before its hold is settled: tests that read the
 * wallet or the ledger after a task ends wait for this first.
 */
export function waitForFinalized(gw: Gateway, id: string, timeoutMs = 5000): Promise<true> {
  return waitFor(async () => (await gw.tasks.get(id))?.finalized === true, timeoutMs, `task ${id} finalized`);
}

/** A tenant with a fresh key and `credits` (default 1,000,000) in its wallet, made through the services. */
export async function newTenant(gw: Gateway, opts: { scopes?: string[]; mode?: 'live' | 'test'; expires_at?: string; requires_live?: boolean; credits?: number } = {}) {
  const tenant = await gw.tenants.createTenant({ name: `t-${Math.random().toString(36).slice(2, 8)}`, requires_live: opts.requires_live });
  const { key, record } = await gw.tenants.issueKey(tenant.id, opts);
  const credits = opts.credits ?? 1_000_000;
  if (credits > 0) await gw.billing.topUp(tenant.id, credits * 1000, `test-topup-${tenant.id}`);
  return { tenant, key, keyId: record.id };
}

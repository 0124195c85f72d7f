// A gateway serving only provider_c (a temporary vendors dir holding its descriptor), its
// upstream played by FakeOpenAI, and a tenant with credits.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { Gateway } from '../../engine/gateway.ts';
import { newTenant, ROOT, startTestGateway, type TestGatewayOptions } from '../helpers/gateway.ts';
import { FakeOpenAI } from './fake-openai.ts';

export interface ChatRig {
  gw: Gateway;
  up: FakeOpenAI;
  key: string;
  tenantId: string;
  keyId: string;
  client: OpenAI;
  /** An openai client on the gateway's /v1 aliases with `key`. */
  clientFor(key: string, opts?: { maxRetries?: number }): OpenAI;
  close(): Promise<void>;
}

export type ChatRigOptions = TestGatewayOptions & { credits?: number; upstreamTimeoutMs?: number };

/**
 * The rig of the calling `describe`: made before its tests (before each test with `each: true`)
 * and closed after them, the set-up every chat suite shares. The object returned is filled in
 * when the rig is made, so the tests read it as the rig itself.
 */
export function useChatRig(o: ChatRigOptions & { each?: boolean } = {}): ChatRig {
  const { each, ...options } = o;
  const rig = {} as ChatRig;
  (each ? beforeEach : before)(async () => void Object.assign(rig, await chatRig(options)));
  (each ? afterEach : after)(() => rig.close());
  return rig;
}

export async function chatRig(o: ChatRigOptions = {}): Promise<ChatRig> {
  const dir = mkdtempSync(join(tmpdir(), 'chat-vendors-'));
  cpSync(join(ROOT, 'vendors', 'provider_c.yaml'), join(dir, 'provider_c.yaml'));
  cpSync(join(ROOT, 'vendors', 'provider_c'), join(dir, 'provider_c'), { recursive: true });
  const up = await new FakeOpenAI().start();
  const gw = await startTestGateway({
    sandbox: false,
    vendorsDir: dir,
    upstreams: { provider_c: { base_url: up.url, credentials: { api_key: 'sk-upstream-test' }, ...(o.upstreamTimeoutMs ? { timeout_ms: o.upstreamTimeoutMs } : {}) } },
    ...o,
  });
  const { tenant, key, keyId } = await newTenant(gw, { credits: o.credits ?? 1000 });
  const clientFor = (k: string, c: { maxRetries?: number } = {}) => new OpenAI({ apiKey: k, baseURL: `${gw.url}/v1`, maxRetries: c.maxRetries ?? 0 });
  return {
    gw, up, key, tenantId: tenant.id, keyId, client: clientFor(key), clientFor,
    async close() {
      await gw.close();
      await up.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A POST with a raw body (exact bytes) and the gateway key; the answer as text. */
export function rawPost(r: ChatRig, body: string, headers: Record<string, string> = {}, path = '/v1/chat/completions'): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(`${r.gw.url}${path}`);
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { authorization: `Bearer ${r.key}`, 'content-type': 'application/json', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

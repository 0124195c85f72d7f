// Operator commands as a client of the admin API (GATEWAY_ADMIN_TOKEN, GATEWAY_URL).
import { parseArgs } from 'node:util';
import { ADMIN_USAGE } from './usage.ts';

export async function adminCommand(noun: string, args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      name: { type: 'string' }, tenant: { type: 'string' }, scopes: { type: 'string' }, mode: { type: 'string' },
      ttl: { type: 'string' }, credits: { type: 'string' }, 'requires-live': { type: 'boolean' }, url: { type: 'string' },
      ref: { type: 'string' }, limit: { type: 'string' }, json: { type: 'string' },
    },
  });
  const verb = positionals[0];
  const base = (values.url ?? process.env.GATEWAY_URL ?? `http://127.0.0.1:${process.env.PORT || 8080}`).replace(/\/+$/, '');
  const token = process.env.GATEWAY_ADMIN_TOKEN;
  if (!token) {
    console.error('set GATEWAY_ADMIN_TOKEN to the gateway\'s admin token');
    return 2;
  }
  let call: AdminCall;
  try {
    call = adminCall(`${noun} ${verb ?? ''}`, values, positionals);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }
  const { method, path, body } = call;
  const res = await fetch(`${base}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  (res.ok ? console.log : console.error)(text ? JSON.stringify(JSON.parse(text), null, 2) : `HTTP ${res.status}`);
  return res.ok ? 0 : 1;
}

/** The flags of the admin commands (parseArgs' options in adminCommand). */
interface AdminFlags {
  name?: string; tenant?: string; scopes?: string; mode?: string; ttl?: string; credits?: string;
  'requires-live'?: boolean; url?: string; ref?: string; limit?: string; json?: string;
}

/** One admin API call: its method, path under /admin/v1 and JSON body. */
interface AdminCall {
  method: string;
  path: string;
  body?: unknown;
}

function need(v: string | undefined, flag: string): string {
  if (!v) throw new UsageError(`missing --${flag}`);
  return v;
}

/** The admin API call of `<noun> <verb>` and its flags; UsageError for a command or flag that is wrong. */
function adminCall(command: string, values: AdminFlags, positionals: string[]): AdminCall {
  let method = 'GET';
  let path: string;
  let body: unknown;
  switch (command) {
    case 'tenant create':
      method = 'POST';
      path = '/tenants';
      body = { name: need(values.name, 'name'), ...(values['requires-live'] ? { requires_live: true } : {}) };
      break;
    case 'tenant list':
      path = '/tenants';
      break;
    case 'key create':
      method = 'POST';
      path = `/tenants/${need(values.tenant, 'tenant')}/keys`;
      body = {
        ...(values.name ? { name: values.name } : {}),
        ...(values.scopes ? { scopes: values.scopes.split(',').map((s) => s.trim()) } : {}),
        ...(values.mode ? { mode: values.mode } : {}),
        ...(values.ttl ? { ttl_seconds: Number(values.ttl) } : {}),
      };
      break;
    case 'key list':
      path = `/tenants/${need(values.tenant, 'tenant')}/keys`;
      break;
    case 'key revoke':
      method = 'DELETE';
      path = `/keys/${need(positionals[1], 'KEY_ID (positional)')}`;
      break;
    case 'wallet topup':
      method = 'POST';
      path = `/tenants/${need(values.tenant, 'tenant')}/wallet/topups`;
      body = { credits: need(values.credits, 'credits'), ...(values.ref ? { ref: values.ref } : {}) };
      break;
    case 'wallet ledger':
      path = `/tenants/${need(values.tenant, 'tenant')}/wallet/ledger?limit=${encodeURIComponent(values.limit ?? '50')}`;
      break;
    case 'wallet threshold': {
      method = 'PUT';
      path = `/tenants/${need(values.tenant, 'tenant')}/wallet/threshold`;
      const credits = need(values.credits, 'credits');
      body = { credits: credits === 'default' ? null : credits };
      break;
    }
    case 'limits show':
      path = `/tenants/${need(values.tenant, 'tenant')}/limits`;
      break;
    case 'limits set':
      method = 'PUT';
      path = `/tenants/${need(values.tenant, 'tenant')}/limits`;
      try {
        body = JSON.parse(need(values.json, 'json'));
      } catch (err) {
        if (err instanceof UsageError) throw err;
        throw new UsageError(`--json is not JSON: ${(err as Error).message}`);
      }
      break;
    case 'wallet show':
      path = `/tenants/${need(values.tenant, 'tenant')}/wallet`;
      break;
    default:
      throw new UsageError(`unknown command "${command}"${ADMIN_USAGE}`);
  }
  return { method, path, body };
}

class UsageError extends Error {}

// `gateway check`'s advice on the admin token (config admin.token, or GATEWAY_ADMIN_TOKEN): a
// warning when it is short or a value the documentation shows, since it opens the whole admin
// API and the operator console. Guessing it is slowed per client address (server.failed_auth),
// which only makes a strong token stronger: a weak or published one is found by a patient
// guesser spreading over many addresses, or by anyone who read the docs.
import type { GatewayConfig } from '../config/types.ts';
import type { Finding } from './findings.ts';
import { finding } from './findings.ts';

/** Shortest admin token that passes without a warning (24 characters of base64url: 144 bits). */
export const MIN_ADMIN_TOKEN_LENGTH = 24;

/** Values shown as examples in the docs and tests, or chosen by habit: never a real token. */
const EXAMPLE_TOKENS = new Set(['change-me', 'changeme', 'change_me', 'admin', 'password', 'secret', 'token', 'admin-token', 'test-admin-token', 'mp-admin-token']);

export function adminTokenFindings(config: GatewayConfig, file: string): Finding[] {
  const token = config.admin.token;
  if (!token) return [];
  const at = (message: string) => finding({ file, line: 0, col: 0, pointer: '/admin/token', message }, 'config', 'warning');
  const advice = 'generate one with `openssl rand -base64 32` and set GATEWAY_ADMIN_TOKEN';
  if (EXAMPLE_TOKENS.has(token.toLowerCase())) return [at(`the admin token is an example value from the documentation ("${token}"): anyone who read it can open the admin API; ${advice}`)];
  if (token.length < MIN_ADMIN_TOKEN_LENGTH) return [at(`the admin token is ${token.length} characters long, under ${MIN_ADMIN_TOKEN_LENGTH}: too easy to guess; ${advice}`)];
  return [];
}

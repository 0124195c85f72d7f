// Upstream auth schemes: engine plug-ins a descriptor selects by name (`upstream.auth.scheme`).
// Credential values come from config.yaml (`upstreams.<vendor>.credentials`), never from the
// descriptor.
import type { Clock } from '../util/clock.ts';

/** A descriptor's `upstream.auth` block. */
export type AuthSpec =
  | { scheme: 'bearer'; credential: string }
  | { scheme: 'header'; header: string; credential: string; prefix?: string }
  | { scheme: 'jwt_hs256'; access_key: string; secret_key: string; ttl_seconds?: number }
  | { scheme: 'none' };

export interface AuthPlugin {
  headers(): Promise<Record<string, string>> | Record<string, string>;
}

export class MissingCredentialError extends Error {}

export function createAuth(spec: AuthSpec, credentials: Record<string, string>, clock: Clock): AuthPlugin {
  const need = (name: string): string => {
    const v = credentials[name];
    if (!v) throw new MissingCredentialError(`credential "${name}" is not configured`);
    return v;
  };
  switch (spec.scheme) {
    case 'none':
      return { headers: () => ({}) };
    case 'bearer': {
      const h = { authorization: `Bearer ${need(spec.credential)}` };
      return { headers: () => h };
    }
    case 'header': {
      const h = { [spec.header.toLowerCase()]: `${spec.prefix ?? ''}${need(spec.credential)}` };
      return { headers: () => h };
    }
    case 'jwt_hs256':
      return jwtAuth(need(spec.access_key), need(spec.secret_key), spec.ttl_seconds ?? 1800, clock);
  }
}

/** Bearer JWT (HS256) signed from an access key + secret key; reused until a minute before expiry. */
function jwtAuth(accessKey: string, secretKey: string, ttlSeconds: number, clock: Clock): AuthPlugin {
  const secret = new TextEncoder().encode(secretKey);
  let cached: { token: string; refreshAt: number } | undefined;
  return {
    async headers() {
      const now = clock.now();
      if (!cached || now >= cached.refreshAt) {
        const iat = Math.floor(now / 1000);
        // jose is loaded by the first token a JWT vendor needs (once per process): a gateway
        // with no such vendor does not hold its code (about 1.5 MB of memory).
        const { SignJWT } = await import('jose');
        const token = await new SignJWT({})
          .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
          .setIssuer(accessKey)
          .setIssuedAt(iat)
          .setNotBefore(iat - 5)
          .setExpirationTime(iat + ttlSeconds)
          .sign(secret);
        cached = { token, refreshAt: now + Math.max(1, ttlSeconds - 60) * 1000 };
      }
      return { authorization: `Bearer ${cached.token}` };
    },
  };
}

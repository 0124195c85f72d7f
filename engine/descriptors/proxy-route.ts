// Compiles `kind: sync` and `kind: stream` routes: requests proxied to the upstream and
// answered at once (chat completions, model lists).
import type { VendorCompileContext } from './compile-context.ts';
import type { RouteSpec } from './types.ts';

export interface ProxyRoutePlan {
  readonly kind: 'sync' | 'stream';
  readonly key: string;
  readonly id: string;
  readonly vendor: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
}

export function compileProxyRoute(vc: VendorCompileContext, r: RouteSpec, p: string): ProxyRoutePlan {
  vc.at(`${p}/kind`, `route kind "${r.kind}" is not supported by this engine yet`);
  return Object.freeze({ kind: r.kind as 'sync' | 'stream', key: `${vc.vendor}/${r.id}`, id: r.id, vendor: vc.vendor, method: r.method, path: `/vendors/${vc.vendor}${r.path}` });
}

// `gateway check`'s route-collision step: two routes (any vendors, aliases included) answering
// the same method + path, a route id used twice, an alias taking a path the gateway serves itself.
import type { LoadedVendor } from '../descriptors/load-descriptors.ts';
import type { RouteSpec } from '../descriptors/types.ts';
import { finding, type Finding } from './findings.ts';

/** Paths the gateway serves itself; an alias must not take them. */
export const RESERVED_PATHS = ['/healthz', '/readyz', '/openapi.json', '/docs', '/admin/'];

/** Aliases the engine serves: those of proxied (sync, stream) routes. */
export function servedAliases(r: RouteSpec): string[] {
  return r.kind === 'sync' || r.kind === 'stream' ? [...(r.aliases ?? [])] : [];
}

/** The client-facing method + path pairs a route answers. */
export function routeSignatures(vendor: string, r: RouteSpec): string[] {
  const base = `/vendors/${vendor}${r.path}`;
  if (r.kind === 'status') return [`GET ${base}/{task_id}`];
  if (r.kind === 'async') return [`POST ${base}`, `GET ${base}/{task_id}`];
  return [`${r.method} ${base}`, ...servedAliases(r).map((a) => `${r.method} ${a}`)];
}

export function routeCollisions(vendors: readonly LoadedVendor[]): Finding[] {
  const out: Finding[] = [];
  const seen = new Map<string, string>();
  const vendorFiles = new Map<string, string>();
  for (const v of vendors) {
    const d = v.descriptor;
    const other = vendorFiles.get(d.vendor);
    if (other) out.push(finding(v.source.problem('/vendor', `vendor "${d.vendor}" is also described by ${other}`), 'route-collision'));
    vendorFiles.set(d.vendor, v.source.file);
    const ids = new Set<string>();
    d.routes.forEach((r, i) => {
      if (ids.has(r.id)) out.push(finding(v.source.problem(`/routes/${i}/id`, `route id "${r.id}" is used twice in this descriptor`), 'route-collision'));
      ids.add(r.id);
      if ((r.aliases ?? []).length && !servedAliases(r).length) {
        out.push(finding(v.source.problem(`/routes/${i}/aliases`, `aliases are served for sync and stream routes only: this ${r.kind} route's aliases are ignored`), 'engine', 'warning'));
      }
      servedAliases(r).forEach((a, j) => {
        const reserved = RESERVED_PATHS.find((p) => (p.endsWith('/') ? a.startsWith(p) : a === p || a.startsWith(`${p}/`)));
        if (reserved) out.push(finding(v.source.problem(`/routes/${i}/aliases/${j}`, `alias ${a} takes ${reserved}, which the gateway serves itself`), 'route-collision'));
      });
      for (const sig of routeSignatures(d.vendor, r)) {
        const prev = seen.get(sig);
        const here = `${d.vendor}/${r.id} (${v.source.file})`;
        const isAlias = (r.aliases ?? []).some((a) => sig.endsWith(` ${a}`) || sig.endsWith(` ${a}/{task_id}`));
        if (prev) out.push(finding(v.source.problem(`/routes/${i}/${isAlias ? 'aliases' : 'path'}`, `${sig} is already served by ${prev}`), 'route-collision'));
        else seen.set(sig, here);
      }
    });
  }
  return out;
}

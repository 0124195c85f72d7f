// The route table of a plane: a find-my-way router that also says which methods a path has, so
// both planes answer an unknown path (404) and a known path under another method (405 with
// Allow) from their tables, in the same words. The data plane (./data-plane.ts) fills its table
// from the descriptors; the control plane's table is read once from the express app's routes
// (controlRouteTable below), so express routes need no second declaration.
//
// Path spellings are matched as express matches them: any letter case and an optional trailing
// slash; a doubled slash is another (unknown) path.
import FindMyWay from 'find-my-way';
import type { Express } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';

type Params = Record<string, string | undefined>;

export type Lookup<T> =
  | { store: T; params: Params }
  /** The path is not valid percent-encoding. */
  | { badUrl: true }
  /** 404 or 405 (with Allow). */
  | { error: GatewayError };

export class RouteTable<T> {
  private readonly router = FindMyWay({
    ignoreTrailingSlash: true,
    caseSensitive: false,
    // A task id of any length reaches the handler, which names what is wrong with it.
    maxParamLength: 8192,
    // Marks a path that is not valid percent-encoding (a match without a store, see find()).
    onBadUrl: noop,
  });
  private readonly methods = new Set<string>();

  /** GET routes answer HEAD too (node leaves the body out), as express's do. */
  on(method: string, path: string, store: T): void {
    const methods = method === 'GET' ? ['GET', 'HEAD'] : [method];
    for (const m of methods) {
      if (this.router.find(m as 'GET', path)?.store) continue; // first registration wins, as in express
      this.router.on(m as 'GET', path, noop, store as object);
      this.methods.add(m);
    }
  }

  /** The route of `method path`; badUrl, or a 404/405 error, when there is none. */
  find(method: string, path: string): Lookup<T> {
    const found = this.router.find(method as 'GET', path);
    if (found?.store) return { store: found.store as T, params: found.params };
    if (found) return { badUrl: true };
    const allowed = [...this.methods].filter((m) => m !== method && this.router.find(m as 'GET', path)?.store);
    return { error: allowed.length ? methodNotAllowed(method, allowed) : notFound(method, path) };
  }

  /** Whether `path` is a route of this table under any method. */
  has(path: string): boolean {
    return [...this.methods].some((m) => this.router.find(m as 'GET', path)?.store);
  }
}

export function notFound(method: string, path: string): GatewayError {
  return new GatewayError('resourceNotFound', `No route ${method} ${path}.`);
}

function methodNotAllowed(method: string, allowed: readonly string[]): GatewayError {
  const allow = allowed.join(', ');
  return new GatewayError('methodNotAllowed', `${method} is not allowed here; use ${allow}.`, { headers: { Allow: allow } });
}

/** What express 5's router keeps of a registration (router/lib/layer.js, route.js). */
interface ExpressLayer {
  rawPath?: string | string[] | RegExp;
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: ExpressLayer[] };
}

/**
 * The control plane's table, read from the express app's routes and mounted routers; an entry is
 * its full path pattern (the access line's and the metrics' route label). A middleware
 * mounted without a route (auth, a tenant lookup) adds nothing; a RegExp path is not supported
 * (no control route uses one).
 */
export function controlRouteTable(app: Express): RouteTable<string> {
  const table = new RouteTable<string>();
  const walk = (stack: readonly ExpressLayer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const path of [layer.route.path].flat()) {
          for (const [method, on] of Object.entries(layer.route.methods)) {
            if (on && method !== '_all') table.on(method.toUpperCase(), prefix + path, prefix + path);
          }
        }
      } else if (layer.handle?.stack) {
        const mounts = [layer.rawPath ?? '/'].flat();
        for (const mount of mounts) walk(layer.handle.stack, prefix + (mount === '/' ? '' : String(mount)));
      }
    }
  };
  walk((app as unknown as { router: { stack: ExpressLayer[] } }).router.stack, '');
  return table;
}

function noop(): void {}

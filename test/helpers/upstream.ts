// A real HTTP server playing an upstream in tests: each test installs a handler per path.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Seen {
  method: string;
  path: string;
  /** The query string's parameters (`path` has none). */
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: any;
}

export type Handler = (req: Seen, res: ServerResponse) => void | Promise<void>;

export class FakeUpstream {
  readonly seen: Seen[] = [];
  private readonly routes: Array<{ method: string; pattern: RegExp; handler: Handler }> = [];
  private server?: Server;
  url = '';

  on(method: string, pattern: RegExp | string, handler: Handler): this {
    this.routes.unshift({ method, pattern: typeof pattern === 'string' ? new RegExp(`^${pattern}$`) : pattern, handler });
    return this;
  }

  async start(): Promise<this> {
    this.server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        /* keep text */
      }
      const [path, query] = (req.url ?? '/').split('?') as [string, string | undefined];
      const seen: Seen = { method: req.method ?? 'GET', path, query: new URLSearchParams(query), headers: req.headers, body };
      this.seen.push(seen);
      const route = this.routes.find((r) => r.method === req.method && r.pattern.test(path));
      if (!route) return json(res, 404, { error: 'no such route' });
      await route.handler(seen, res);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

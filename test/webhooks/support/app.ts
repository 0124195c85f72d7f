// A small express app around webhookRouter for tests: a stub auth middleware (tenant and
// scopes from test headers) and a minimal GatewayError → JSON renderer. Listens on 127.0.0.1.
import express, { type NextFunction, type Request, type Response } from 'express';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { isGatewayError } from '../../../engine/errors/gateway-error.ts';
import { webhookRouter } from '../../../engine/http/webhook-routes.ts';
import type { Webhooks } from '../../../engine/webhooks/service.ts';
import { TENANT } from './harness.ts';

export interface TestApi {
  call(method: string, path: string, body?: unknown, opts?: { tenant?: string; scopes?: string; raw?: string }): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export async function startApi(webhooks: Pick<Webhooks, 'endpoints' | 'deliveries'>): Promise<TestApi> {
  const app = express();
  app.use((req: Request, res: Response, next: NextFunction) => {
    const scopes = (req.get('x-test-scopes') ?? '*').split(',');
    res.locals.auth = { tenantId: req.get('x-test-tenant') ?? TENANT, keyId: 'key_test', scopes, mode: 'test' };
    next();
  });
  app.use(webhookRouter(webhooks));
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (isGatewayError(err)) {
      res.status(err.status).json({ status: err.status, error_code: err.code, title: err.title, detail: err.detail, errors: err.errors });
    } else {
      res.status(500).json({ unexpected: String(err) });
    }
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    async call(method, path, body, opts = {}) {
      const headers: Record<string, string> = { 'x-test-scopes': opts.scopes ?? '*' };
      if (opts.tenant) headers['x-test-tenant'] = opts.tenant;
      let payload: string | undefined;
      if (opts.raw !== undefined) payload = opts.raw;
      else if (body !== undefined) payload = JSON.stringify(body);
      if (payload !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(base + path, { method, headers, body: payload });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

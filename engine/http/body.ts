// JSON request bodies: parsed by express.json with a per-route size limit; a body that is not
// declared as JSON is refused with 415 instead of being silently ignored.
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { HTTP_ONLY } from '../errors/catalogue.ts';
import { GatewayError } from '../errors/gateway-error.ts';

const isJsonType = (type: string) => /^application\/([\w.+-]*\+)?json\b/i.test(type);

export function jsonBody(limitBytes: number): RequestHandler[] {
  const requireJson = (req: Request, _res: Response, next: NextFunction) => {
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    if (hasBody && !isJsonType(req.headers['content-type'] ?? '')) {
      const h = HTTP_ONLY.unsupportedMediaType;
      throw new GatewayError(h.code, 'Send the request body as JSON with Content-Type: application/json.', { status: h.status, title: h.title });
    }
    next();
  };
  return [requireJson, express.json({ limit: limitBytes, strict: true, type: (req) => isJsonType(req.headers['content-type'] ?? '') })];
}

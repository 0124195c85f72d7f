// JSON request bodies of express routes: read and parsed by the one body policy
// (./raw-body.ts) with a per-route size limit; req.body is undefined when there is none.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { readJsonRequest } from './raw-body.ts';

export function jsonBody(limitBytes: number): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    readJsonRequest(req, limitBytes).then((body) => {
      req.body = body;
      next();
    }, next);
  };
}

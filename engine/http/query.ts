// Query parameters of the control plane's list routes, read one way: a parameter is given at
// most once, as text (a repeated one is refused rather than guessed), and a page size is digits
// only (2001 otherwise: `1e1`, ` 5`, `-1` are not page sizes) within its route's range (2003).
import type { Request } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';

/** A query parameter given once, as text; undefined when absent. */
export function query(req: Request, name: string): string | undefined {
  const v = (req.query as Record<string, unknown>)[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new GatewayError('parameterValidationFailed', `${name} must be given once, as text.`, { errors: [{ pointer: `/query/${name}`, detail: 'not a single value' }] });
  return v;
}

/** `?limit=`: the page size asked for, `fallback` when absent. */
export function pageLimit(req: Request, fallback: number, max: number): number {
  const limit = query(req, 'limit');
  if (limit === undefined) return fallback;
  if (!/^\d{1,9}$/.test(limit)) throw new GatewayError('parameterValidationFailed', `limit must be an integer from 1 to ${max}.`, { errors: [{ pointer: '/query/limit', detail: 'not an integer' }] });
  const n = Number(limit);
  if (n < 1 || n > max) throw new GatewayError('invalidParameterValue', `limit must be an integer from 1 to ${max}.`, { errors: [{ pointer: '/query/limit', detail: 'out of range' }] });
  return n;
}

// Shared by the vendor tests: a gateway without rate limits, media fixtures of exact sizes, and
// the table runner that asserts HTTP status and service code (and the field at fault) per case.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway, type CallResult, type TestGatewayOptions } from '../helpers/gateway.ts';

export async function vendorGateway(o: TestGatewayOptions = {}): Promise<{ gw: Gateway; key: string }> {
  const gw = await startTestGateway(o); // test gateways have no rate, concurrency or spend limits
  const { key } = await newTenant(gw, { credits: 100_000_000 });
  return { gw, key };
}

// ---- media ------------------------------------------------------------------------------

export type ImageKind = 'png' | 'jpeg' | 'bmp' | 'webp' | 'gif' | 'tiff' | 'noise';

const HEADS: Record<ImageKind, number[]> = {
  png: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52],
  jpeg: [0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0],
  bmp: [0x42, 0x4d, 0x36, 0, 0, 0, 0, 0, 0, 0, 0x36, 0, 0, 0],
  webp: [0x52, 0x49, 0x46, 0x46, 0, 0, 0, 0, 0x57, 0x45, 0x42, 0x50, 0x56, 0x50, 0x38, 0x20],
  gif: [0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 1, 0, 1, 0],
  tiff: [0x49, 0x49, 0x2a, 0x00, 8, 0, 0, 0],
  noise: [0x00, 0x13, 0x37, 0x42, 0x99, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09],
};

/** Bytes of exactly `size` that the gateway's sniffing takes for `kind` (a header, then filler). */
export function imageBytes(kind: ImageKind, size = 64): Buffer {
  const head = Buffer.from(HEADS[kind]);
  const out = Buffer.alloc(Math.max(size, head.length), 0x5a);
  head.copy(out, 0);
  return out.subarray(0, Math.max(size, head.length));
}

export const b64 = (kind: ImageKind, size = 64) => imageBytes(kind, size).toString('base64');
export const dataUri = (kind: ImageKind, size = 64, type = kind === 'jpeg' ? 'image/jpeg' : `image/${kind}`) => `data:${type};base64,${b64(kind, size)}`;

// ---- table runner -----------------------------------------------------------------------

export interface Case {
  name: string;
  body: unknown;
  /** Expected HTTP status. */
  status: number;
  /** Expected service code (error answers). */
  code?: number;
  /** A JSON pointer the answer's errors must name. */
  pointer?: string;
  /** Raw text instead of a JSON body (malformed JSON cases). */
  raw?: string;
}

export const ok = (name: string, body: unknown, status = 202): Case => ({ name, body, status });
export const bad = (name: string, body: unknown, code: number, pointer?: string): Case => ({ name, body, status: 400, code, pointer });

/** The service code and error pointers of an answer in either validation shape. */
export function errorOf(r: CallResult): { code: number | undefined; pointers: string[]; shape: 'problem' | 'task_info' | 'none' } {
  const b = r.body ?? {};
  const pointers = Array.isArray(b.errors) ? b.errors.map((e: { pointer: string }) => e.pointer) : [];
  if (b.task_info?.error) return { code: b.task_info.error.code, pointers, shape: 'task_info' };
  if (typeof b.error_code === 'number') return { code: b.error_code, pointers, shape: 'problem' };
  return { code: undefined, pointers, shape: 'none' };
}

/**
 * One `it` per case: POST it and assert the status, the code and (when given) the pointer; a
 * success must be a pending task_info; an error must use the route's validation shape.
 */
export function runTable(title: string, ctx: () => { gw: Gateway; key: string }, path: string, cases: readonly Case[], shape: 'problem' | 'task_info' = 'problem'): void {
  describe(title, () => {
    const names = new Set<string>();
    for (const c of cases) {
      if (names.has(c.name)) throw new Error(`duplicate case name: ${c.name}`);
      names.add(c.name);
      it(`${c.name} → ${c.status}${c.code ? ` / ${c.code}` : ''}`, async () => {
        const { gw, key } = ctx();
        const r = c.raw !== undefined
          ? await call(gw.url, 'POST', path, { key, raw: c.raw, headers: { 'content-type': 'application/json' } })
          : await call(gw.url, 'POST', path, { key, body: c.body });
        const err = errorOf(r);
        expect(r.status, `${c.name}: ${r.text.slice(0, 400)}`).to.equal(c.status);
        if (c.status < 300) {
          expect(r.body.task_info.status).to.equal('pending');
          expect(r.body.task_info.id).to.match(/^[0-9a-f-]{36}$/);
          return;
        }
        expect(err.code, `${c.name}: ${r.text.slice(0, 400)}`).to.equal(c.code);
        expect(err.shape).to.equal(shape);
        if (shape === 'task_info') {
          expect(r.body.task_info.status).to.equal('failed');
          expect(r.body.task_info.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
          expect(r.body.task_info.error.title).to.be.a('string').and.not.empty;
          expect(r.body.task_info.error.detail).to.be.a('string').and.not.empty;
        } else {
          expect(r.headers.get('content-type')).to.match(/^application\/problem\+json/);
          expect(r.body.status).to.equal(400);
        }
        if (c.pointer !== undefined) expect(err.pointers, `${c.name}: ${r.text.slice(0, 400)}`).to.include(c.pointer);
      });
    }
  });
}

/** A describe block with one test gateway for all its tables (each one a runTable). */
export function validationTables(title: string, tables: readonly { title: string; path: string; cases: readonly Case[]; shape?: 'problem' | 'task_info' }[]): void {
  describe(title, function () {
    this.timeout(60_000);
    let ctx: { gw: Gateway; key: string };
    before(async () => {
      ctx = await vendorGateway();
    });
    after(async () => {
      await ctx.gw.close();
    });
    for (const t of tables) runTable(t.title, () => ctx, t.path, t.cases, t.shape);
  });
}

// ---- case generators ----------------------------------------------------------------------

/** Each value of a wrong JSON type → 2001 at the field. */
export function wrongTypes(base: Record<string, unknown>, field: string, values: readonly unknown[]): Case[] {
  return values.map((v) => bad(`${field} of wrong type ${JSON.stringify(v)}`, { ...base, [field]: v }, 2001, `/${field}`));
}

/** Integer range: both edges pass, one past each edge is 2003. */
export function intRange(base: Record<string, unknown>, field: string, min: number, max: number, okStatus = 202): Case[] {
  return [
    ok(`${field} at its minimum ${min}`, { ...base, [field]: min }, okStatus),
    bad(`${field} one below its minimum (${min - 1})`, { ...base, [field]: min - 1 }, 2003, `/${field}`),
    ok(`${field} at its maximum ${max}`, { ...base, [field]: max }, okStatus),
    bad(`${field} one above its maximum (${max + 1})`, { ...base, [field]: max + 1 }, 2003, `/${field}`),
  ];
}

/** String length: the maximum passes, one more character is 2003. */
export function maxLength(base: Record<string, unknown>, field: string, max: number, okStatus = 202): Case[] {
  return [
    ok(`${field} of exactly ${max} characters`, { ...base, [field]: 'x'.repeat(max) }, okStatus),
    bad(`${field} of ${max + 1} characters`, { ...base, [field]: 'x'.repeat(max + 1) }, 2003, `/${field}`),
  ];
}

/** Every enum value passes. */
export function enumValues(base: Record<string, unknown>, field: string, values: readonly unknown[], okStatus = 202): Case[] {
  return values.map((v) => ok(`${field} = ${JSON.stringify(v)}`, { ...base, [field]: v }, okStatus));
}

/** An unknown parameter is 2004 at its own pointer. */
export function unknownFields(base: Record<string, unknown>, names: readonly string[]): Case[] {
  return names.map((n) => bad(`unknown parameter ${n}`, { ...base, [n]: 1 }, 2004, `/${n}`));
}

/** Malformed bodies: not JSON, not an object. */
export function malformedBodies(): Case[] {
  return [
    { name: 'malformed JSON', body: undefined, raw: '{"prompt": "x",', status: 400, code: 2001 },
    { name: 'a JSON array body', body: undefined, raw: '["x"]', status: 400, code: 2001 },
    { name: 'a JSON string body', body: undefined, raw: '"x"', status: 400, code: 2001 },
  ];
}

// The synchronous fast path of descriptor expressions (literals, paths of names over objects and
// arrays, bound variables, object constructors, conditions, $exists and $count: engine/util/expr.ts)
// must give JSONata's answer whenever it answers at all, and hand everything else to JSONata.
// Checked differentially: every JSONata expression found in the shipped descriptors (the catalogue
// included), over every upstream fixture and validated request example of the same descriptor
// (and variants with arrays, nulls and wrong types; pairing each descriptor's expressions with
// every other's answers grew as the square of the catalogue and says nothing more), plus a table
// of hand-picked edge cases. The plain paths of the hot path must take it.
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import jsonata from 'jsonata';
import { parse } from 'yaml';
import { ASK_JSONATA, compileExpr, compileFastPath, ExprError } from '../../engine/util/expr.ts';
import type { Gateway } from '../../engine/gateway.ts';
import { startTestGateway } from '../helpers/gateway.ts';

const VENDORS = new URL('../../vendors/', import.meta.url).pathname;

type Outcome = { value: string } | { error: true } | { fallback: true };
const show = (v: unknown) => (v === undefined ? 'undefined' : JSON.stringify(v));

async function viaJsonata(src: string, input: unknown, bindings?: Record<string, unknown>): Promise<Outcome> {
  try {
    const v = await jsonata(src).evaluate(input, bindings);
    return { value: show(Array.isArray(v) ? Array.from(v) : v) };
  } catch {
    return { error: true };
  }
}

/** The fast path's answer (it never throws: a throw fails the test), or fallback when JSONata must answer. */
function viaFast(src: string, input: unknown, bindings?: Record<string, unknown>): Outcome {
  const fast = compileFastPath(jsonata(src).ast());
  const value = fast ? fast(input, bindings) : ASK_JSONATA;
  return value === ASK_JSONATA ? { fallback: true } : { value: show(value) };
}

/** Same answer as JSONata, or handed to JSONata; returns whether the fast path answered. */
async function agree(src: string, input: unknown, bindings?: Record<string, unknown>): Promise<boolean> {
  const fast = viaFast(src, input, bindings);
  if ('fallback' in fast) return false;
  const reference = await viaJsonata(src, input, bindings);
  expect(fast, `${src} over ${show(input).slice(0, 200)} ${bindings ? `with ${show(bindings).slice(0, 200)}` : ''}`).to.deep.equal(reference);
  return true;
}

/** Per descriptor (by vendor): every string in it that JSONata parses (prose that happens to parse is tested too). */
function descriptorExpressions(): Map<string, string[]> {
  const byVendor = new Map<string, string[]>();
  for (const f of readdirSync(VENDORS).filter((f) => f.endsWith('.yaml'))) {
    const out = new Set<string>();
    const walk = (v: unknown): void => {
      if (typeof v === 'string') {
        try {
          jsonata(v);
          out.add(v.trim());
        } catch {
          // not an expression
        }
      } else if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') Object.values(v).forEach(walk);
    };
    walk(parse(readFileSync(join(VENDORS, f), 'utf8')));
    byVendor.set(f.slice(0, -5), [...out]);
  }
  return byVendor;
}

/** Per vendor: its fixtures (vendors/<vendor>/fixtures/**\/*.json). */
function fixtures(): Map<string, unknown[]> {
  const byVendor = new Map<string, unknown[]>();
  const walk = (dir: string, out: unknown[]): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p, out);
      else if (e.name.endsWith('.json')) out.push(JSON.parse(readFileSync(p, 'utf8')));
    }
  };
  for (const v of readdirSync(VENDORS, { withFileTypes: true })) if (v.isDirectory()) walk(join(VENDORS, v.name), byVendor.set(v.name, []).get(v.name)!);
  return byVendor;
}

/** Variants that push evaluation into sequences and type errors: arrays for scalars, nulls, strings for numbers. */
function variants(input: unknown): unknown[] {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return [input];
  const out: unknown[] = [input];
  const entries = Object.entries(input);
  for (const [k, v] of entries.slice(0, 8)) {
    out.push({ ...input, [k]: [v, v] }, { ...input, [k]: null }, { ...input, [k]: typeof v === 'number' ? String(v) : 1.5 });
  }
  return out;
}

describe('descriptor expressions: the fast path (literals, dotted paths) agrees with JSONata', function () {
  this.timeout(120_000);
  let gw: Gateway;
  const requests = new Map<string, Record<string, unknown>[]>();
  const upstream = fixtures();
  const exprs = descriptorExpressions();

  before(async () => {
    gw = await startTestGateway({ only: [...exprs.keys()] });
    for (const v of gw.vendors) {
      const validated: Record<string, unknown>[] = [];
      for (const route of v.routes) {
        if (route.kind !== 'async') continue;
        for (const ex of route.spec.request?.examples ?? []) {
          try {
            validated.push(await route.validate(structuredClone(ex)));
          } catch {
            // an example the route refuses on purpose
          }
        }
      }
      requests.set(v.vendor, validated);
    }
  });
  after(() => gw?.close());

  // What a result mapping may give (`$result.images`): several, one, none, nested, not an array.
  const RESULTS: unknown[] = [{ images: ['a', 'b'] }, { images: 'a' }, { images: ['a'] }, { images: [] }, {}, { images: [['a', 'b'], 'c'] }, { images: null }, { images: [{ url: 'a' }] }, [{ images: 'a' }, { images: ['b', 'c'] }]];
  const count = <T>(m: Map<string, T[]>) => [...m.values()].reduce((n, l) => n + l.length, 0);

  it('finds the descriptors\' expressions, fixtures and request examples', () => {
    expect(count(exprs)).to.be.greaterThan(60);
    expect(count(upstream)).to.be.greaterThan(20);
    expect(count(requests)).to.be.greaterThan(10);
  });

  it('every descriptor expression over every fixture and request of its descriptor (and their variants): same answer or JSONata\'s', async () => {
    let fast = 0;
    let total = 0;
    for (const [vendor, sources] of exprs) {
      const reqs = requests.get(vendor) ?? [];
      const inputs = [...(upstream.get(vendor) ?? []), ...reqs].flatMap(variants);
      for (const src of sources) {
        for (const input of inputs) {
          total++;
          const req = reqs.length ? reqs[total % reqs.length] : {};
          const bindings = { request: req, result: RESULTS[total % RESULTS.length], upstream: input, item: { prompt: 'x <<<element_1>>>', duration: 3 } };
          if (await agree(src, input, bindings)) fast++;
          if (await agree(src, { stage: 'submit', http_status: 400, body: input, message: 'm' })) fast++;
        }
      }
    }
    expect(total).to.be.greaterThan(10_000);
    expect(fast, 'the fast path answers the plain paths').to.be.greaterThan(total * 0.1);
  });

  const table: [string, unknown, Record<string, unknown>?][] = [
    ['a.b.c', { a: { b: { c: 1 } } }],
    ['a.b.c', { a: [{ b: { c: 1 } }, { b: { c: 2 } }] }],
    ['a.b', { a: { b: [1, 2] } }],
    ['a.b', { a: { b: [] } }],
    ['a.b', { a: { b: [[1], [2]] } }],
    ['a', { a: null }],
    ['a.b', { a: 'text' }],
    ['a.constructor', { a: {} }],
    ['a[0]', { a: [1, 2] }],
    ['a[-1]', { a: [1, 2] }],
    ['a[5]', { a: [1, 2] }],
    ['a[0]', { a: 7 }],
    ['a[0]', {}],
    ['a[0].b', { a: [{ b: 2 }] }],
    ['a[0]', { a: [[1, 2], [3]] }],
    ['$', { a: 1 }],
    ['$$.a', { a: 1 }],
    ['$x.y', {}, { x: { y: 3 } }],
    ['$x.y', {}, { x: [{ y: 3 }, { y: 4 }] }],
    ['$missing', {}],
    ['$count', {}],
    ['( $a := 1; $b := $a + 1; $b * 10 )', {}],
    ['( $a := 1; ( $a := 2 ); $a )', {}],
    ['$a := 5', {}],
    ['( $count := 2; $count )', {}],
    ['$count(x)', {}, { count: 1 }],
    ['a + b', { a: 1, b: 2 }],
    ['a + b', { a: 1 }],
    ['a + b', { a: '1', b: 2 }],
    ['a / b', { a: 1, b: 0 }],
    ['a % b', { a: -7, b: 3 }],
    ['-a', { a: 4 }],
    ['-a', { a: 'x' }],
    ['a = b', { a: 1, b: 1 }],
    ['a = b', { a: 1 }],
    ['a != b', {}],
    ['a = null', { a: null }],
    ['a = b', { a: { x: 1 }, b: { x: 1 } }],
    ['a < b', { a: 1, b: 2 }],
    ['a < b', { a: 'a', b: 'b' }],
    ['a < b', { a: 1, b: 'b' }],
    ['a < b', { a: 1 }],
    ['a < b', { a: true, b: 1 }],
    ['a and b', { a: 1, b: 'x' }],
    ['a and b', { a: 1 }],
    ['a or b', { b: {} }],
    ['a or b', { a: [0, 0], b: 0 }],
    ['a ? "y" : "n"', { a: '' }],
    ['a ? "y"', { a: 0 }],
    ['a ?? b', { b: 2 }],
    ['a ?? b', { a: null, b: 2 }],
    ['"x" & a & b', { a: 1, b: true }],
    ['"x" & a', { a: 1.5 }],
    ['"x" & a', { a: { k: 1 } }],
    ['"x" & a', {}],
    ['[a, b, [c]]', { a: 1, b: [2, 3], c: 4 }],
    ['[a, b]', {}],
    ['[]', {}],
    ['{ "k": a, "m": b }', { a: 1 }],
    ['{ "k": a, "k": b }', { a: 1, b: 2 }],
    ['{ a: 1 }', { a: 'key' }],
    ['{ "k": a }', [{ a: 1 }, { a: 2 }]],
    ['{ "k": a, "m": { "n": b, "o": "lit" } }', { a: 1, b: 'x' }],
    ['{ "k": a, "m": { "n": b } }', { a: [1, 2] }],
    ['{ "k": a, "m": { "n": b } }', { b: { c: [1] } }],
    ['{ "k": a }', 'text'],
    ['{ "k": a }', null],
    ['{ "k": a }', undefined],
    ['{}', {}],
    ['{ "__proto__": a, "constructor": b }', { a: 1, b: 2 }],
    ['{ "k": [a] }', { a: 1 }],
    ['{ "k": $exists(a) ? a : "none" }', {}],
    ['{ "k": $exists(a) ? [0..a] }', { a: 2 }],
    ['{ "k": $exists(a) ? [0..a] }', {}],
    ['a ? b : c', { a: 0, b: 1, c: 2 }],
    ['a ? b : c', { a: null, b: 1, c: 2 }],
    ['a ? b : c', { a: 'x', b: 1, c: 2 }],
    ['a ? b : c', { a: {}, b: 1, c: 2 }],
    ['a ? b : c', { a: [0], b: 1, c: 2 }],
    ['a ? b : c', { a: false, b: 1 }],
    ['a.b', { a: [{ b: 1 }] }],
    ['a.b', { a: [{ b: [1] }] }],
    ['a.b', { a: [{ b: [1] }, { b: 2 }] }],
    ['a.b', { a: [{ b: [[1], 2] }, { c: 2 }] }],
    ['a.b', { a: [{ c: 1 }] }],
    ['a.b', { a: [] }],
    ['a.b', { a: [[{ b: 1 }, { b: 2 }], { b: [3] }] }],
    ['a.b', { a: [[{ b: [1] }]] }],
    ['a.b', { a: [null, 'x', 1, { b: 0 }] }],
    ['a.b.c', { a: [{ b: [{ c: 1 }, { c: [2, 3] }] }, { b: { c: [[4]] } }] }],
    ['a.b.c', { a: [{ b: [{ c: [] }] }] }],
    ['a.b.c', { a: { b: [{ c: [[1, 2]] }] } }],
    ['a', [{ a: 1 }, { a: 2 }]],
    ['a', [{ a: [1] }]],
    ['a', [1, 2]],
    ['a.b', 'text'],
    ['output.results.url', { output: { results: [{ url: 'u1' }, { url: 'u2' }] } }],
    ['output.results.url', { output: { results: [{ url: 'u1' }] } }],
    ['output.results.url', { output: { results: [] } }],
    ['output.results.url', { output: { results: [{ code: 'x' }, { url: 'u2' }] } }],
    ['$x', {}, { x: [1] }],
    ['$x', {}, { x: [] }],
    ['$x', {}, { x: undefined }],
    ['$x.y', {}, { x: [{ y: [1] }] }],
    ['$x.y', {}, { x: [{ y: [] }, { y: [2] }] }],
    ['$x.y', {}, { x: undefined }],
    ['$x.y', {}, { y: 1 }],
    ['$x.y', [1], { x: { y: 1 } }],
    ['$count', {}, { count: 1 }],
    ['$count($x)', {}, { x: 2 }],
    ['$count($x)', {}, { x: undefined }],
    ['$count($result.images)', {}, { result: { images: ['a', 'b'] } }],
    ['$count($result.images)', {}, { result: { images: 'a' } }],
    ['$count($result.images)', {}, { result: { images: [] } }],
    ['$count($result.images)', {}, { result: {} }],
    ['$count($result.images)', {}, { result: { images: [['a', 'b']] } }],
    ['$count($result.images)', {}, { result: [{ images: ['a'] }, { images: ['b', 'c'] }] }],
    ['$count($result.images)', {}, { result: { images: null } }],
    ['$count($result.images)', {}, {}],
    ['$count(a.b)', { a: [{ b: [1, 2] }] }],
    ['$count(a.b)', { a: [{ b: [1, 2] }, { b: 3 }] }],
    ['$count(a)', { a: null }],
    ['$count(a)', { a: [[]] }],
    ['$count(a, b)', { a: [1] }],
    ['$count()', {}],
    ['$count(a)', {}, { count: undefined }],
    ['$exists(a.b)', { a: [{ c: 1 }] }],
    ['$exists(a.b)', { a: [{ b: [] }] }],
    ['$exists($x)', {}, { x: null }],
    ['{ "k": a.b }', { a: [{ b: 1 }, { b: 2 }] }],
    ['{ "k": $count(a) }', { a: [1, 2] }],
    ['a.b ? 1 : 2', { a: [{ b: 1 }] }],
    ['a.b ? 1 : 2', { a: [{ b: 1 }, { b: 0 }] }],
    ['$exists(a.b)', { a: { b: false } }],
    ['$exists(a.b)', { a: 1 }],
    ['$exists(a.b)', { a: [{ b: 1 }] }],
    ['$exists("x")', {}],
    ['$exists(a)', { a: null }],
    ['$count(a)', { a: [1, 2, 3] }],
    ['$count(a)', { a: 'x' }],
    ['$count(a)', {}],
    ['$not(a)', { a: '' }],
    ['$not(a)', {}],
    ['$not()', {}],
    ['$boolean(a)', { a: {} }],
    ['$string(a)', { a: 12 }],
    ['$string(a)', { a: 0.1 }],
    ['$number(a)', { a: '12' }],
    ['$number(a)', { a: true }],
    ['$ceil(a)', { a: 1.2 }],
    ['$ceil(a)', { a: '1.2' }],
    ['$floor(a)', { a: [1.7] }],
    ['$sum(a)', { a: [1, 2, 3] }],
    ['$sum(a)', { a: [] }],
    ['$sum(a)', { a: 4 }],
    ['$sum(a)', { a: ['1'] }],
    ['$max(a)', { a: [1, 9, 3] }],
    ['$min(a)', { a: [] }],
    ['$uppercase(a)', { a: 'abc' }],
    ['$uppercase(a)', { a: 1 }],
    ['$join(a, "-")', { a: ['x', 'y'] }],
    ['$join(a)', { a: 'x' }],
    ['$join(a, "-")', { a: ['x', 1] }],
    ['$contains(a, "b")', { a: 'abc' }],
    ['a[b > 1]', { a: [{ b: 1 }, { b: 2 }] }],
    ['[0..2]', {}],
    ['a in [1, 2]', { a: 1 }],
    ['$constructor(a)', { a: 1 }],
    ['$toString', {}],
    ['( $constructor := 1; $constructor )', {}],
  ];
  for (const [src, input, bindings] of table) {
    it(`${src} over ${show(input)}${bindings ? ` with ${show(bindings)}` : ''}`, async () => {
      await agree(src, input, bindings);
    });
  }

  it('the hot path\'s plain paths, literals and submit body take the fast path (no JSONata evaluation)', () => {
    const d = parse(readFileSync(join(VENDORS, 'provider_d.yaml'), 'utf8')).routes[0];
    for (const [src, input] of [
      [d.upstream.submit.task_id, { output: { task_id: 'x' } }],
      [d.upstream.poll.status, { output: { task_status: 'RUNNING' } }],
      [d.pricing.quantity, { n: 4 }],
      [d.result.images, { output: { task_status: 'SUCCEEDED', results: [{ url: 'https://x/1.png' }, { url: 'https://x/2.png' }] } }],
      [d.result.images, { output: { task_status: 'SUCCEEDED', results: [{ url: 'https://x/1.png' }] } }],
      [d.upstream.submit.body, { prompt: 'p', size: '1280*1280', n: 1, prompt_extend: false, safety_filter: true }],
      ['data.task_id', { data: { task_id: 'x' } }],
      ['4', {}],
      ['"text"', {}],
      ['null', {}],
    ] as [string, unknown][]) {
      expect(viaFast(src, input), src).to.have.property('value');
    }
    for (const images of [['a', 'b'], 'a', []]) expect(viaFast(d.pricing.settle_quantity, {}, { request: {}, result: { images } }), d.pricing.settle_quantity).to.have.property('value');
    expect(compileFastPath(jsonata('$sum(a)').ast()), 'a function call other than $count, $exists is JSONata\'s').to.equal(undefined);
    expect(compileFastPath(jsonata('a[0]').ast()), 'a filter is JSONata\'s').to.equal(undefined);
  });

  it('compileExpr answers through the fast path or JSONata alike, and JSONata\'s errors reach the caller', async () => {
    expect(await compileExpr('a + 1').evaluate({ a: 1 })).to.equal(2);
    expect(await compileExpr('a.b').evaluate({ a: { b: 1 } })).to.equal(1);
    expect(await compileExpr('a.b').evaluate({ a: [{ b: 1 }, { b: 2 }] })).to.deep.equal([1, 2]);
    expect(await compileExpr('$count(a[b > 1])').evaluate({ a: [{ b: 1 }, { b: 2 }] })).to.equal(1);
    let failure: unknown;
    await compileExpr('a + 1').evaluate({ a: 'x' }).catch((e: unknown) => (failure = e));
    expect(failure).to.be.instanceOf(ExprError).with.property('message').that.matches(/failed/);
  });
});

// Expressions in descriptors (mappings, pricing, rules) are JSONata, compiled once when the
// descriptor is compiled. The most common shapes are answered synchronously without JSONata's
// per-node promises: literals, plain dotted paths (`output.task_id`, `size`), and the request
// bodies built of them (object constructors with literal keys, `cond ? a : b`, `$exists(path)`;
// model D's submit body through JSONata was 48 KB of a task life's 187 KB of garbage, measured
// with bench/allocation.ts). Everything else, and any evaluation that meets an array (JSONata's
// sequences) or a branch the fast path does not know, is JSONata's to answer, for the whole
// expression.
import { createRequire } from 'node:module';

// Required, not imported: jsonata is one CommonJS file (299 KB, held as 598 KB of UTF-16 text),
// and an ESM import of a CommonJS module keeps a second copy of its source for the life of the
// process (0.57 MB of heap; docs/performance.md, Memory).
const jsonata = createRequire(import.meta.url)('jsonata') as typeof import('jsonata');

export interface CompiledExpr {
  readonly source: string;
  evaluate(input: unknown, bindings?: Record<string, unknown>): Promise<unknown>;
}

export class ExprError extends Error {
  readonly position: number | undefined;
  constructor(message: string, position?: number) {
    super(message);
    this.name = 'ExprError';
    this.position = position;
  }
}

/** Compile an expression; throws ExprError (with the character position) when it does not parse. */
export function compileExpr(source: string): CompiledExpr {
  const trimmed = source.trim();
  let expr: ReturnType<typeof jsonata>;
  try {
    expr = jsonata(trimmed);
  } catch (err) {
    const e = err as { message?: string; position?: number };
    throw new ExprError(e.message ?? String(err), e.position);
  }
  const viaJsonata = async (input: unknown, bindings?: Record<string, unknown>): Promise<unknown> => {
    try {
      return normalise(await expr.evaluate(input, bindings));
    } catch (err) {
      const e = err as { message?: string; position?: number };
      throw new ExprError(`expression \`${trimmed}\` failed: ${e.message ?? String(err)}`, e.position);
    }
  };
  const fast = compileFastPath(expr.ast());
  if (!fast) return { source: trimmed, evaluate: viaJsonata };
  return {
    source: trimmed,
    evaluate(input, bindings) {
      const value = fast(input);
      return value === ASK_JSONATA ? viaJsonata(input, bindings) : Promise.resolve(value);
    },
  };
}

/** What the fast path answers when the input leads it into an array: JSONata must answer. */
export const ASK_JSONATA: unique symbol = Symbol('ask JSONata');

export type FastPath = (input: unknown) => unknown;

/** The fields of JSONata's AST read here; any other field on a step (a filter, `[]`, `@`, `#`...) means JSONata. */
interface Node {
  type: string;
  value?: unknown;
  steps?: Node[];
  [other: string]: unknown;
}

const PLAIN_STEP_FIELDS = new Set(['type', 'value', 'position']);
const OBJECT_FIELDS = new Set(['type', 'value', 'position', 'lhs']);
const CONDITION_FIELDS = new Set(['type', 'position', 'condition', 'then', 'else']);
const CALL_FIELDS = new Set(['type', 'value', 'position', 'arguments', 'procedure']);
/** No field but these (one JSONata leaves undefined, like a call's `name`, counts as absent). */
const only = (node: Node, fields: ReadonlySet<string>) => Object.keys(node).every((k) => fields.has(k) || node[k] === undefined);
const ask: FastPath = () => ASK_JSONATA;

/**
 * A synchronous evaluator for a literal, a dotted path of plain names, an object constructor with
 * literal keys, a condition or `$exists(...)`, built of the same; undefined for anything else. Inside
 * an object or a branch, a part it does not know hands the whole expression to JSONata when reached.
 */
export function compileFastPath(ast: unknown): FastPath | undefined {
  const node = ast as Node;
  if (node.type === 'string' || node.type === 'number' || node.type === 'value') {
    const value = node.value;
    return () => value;
  }
  if (node.type === 'unary' && node.value === '{' && only(node, OBJECT_FIELDS)) return objectOf(node.lhs as [Node, Node][]);
  if (node.type === 'condition' && only(node, CONDITION_FIELDS)) return conditionOf(node);
  if (node.type === 'function' && only(node, CALL_FIELDS)) return existsOf(node);
  return plainPath(node);
}

/** A dotted path of plain names: JSONata's when it steps over (or ends at) an array. */
function plainPath(node: Node): FastPath | undefined {
  const steps = node.type === 'path' && Object.keys(node).every((k) => k === 'steps' || PLAIN_STEP_FIELDS.has(k)) ? node.steps! : [node];
  if (!steps.every((s) => s.type === 'name' && only(s, PLAIN_STEP_FIELDS))) return undefined;
  const keys = steps.map((s) => String(s.value));
  return (input) => {
    let cur = input;
    for (const key of keys) {
      if (Array.isArray(cur)) return ASK_JSONATA; // a step over an array maps over it: a sequence
      if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, key)) return undefined;
      cur = (cur as Record<string, unknown>)[key];
    }
    return Array.isArray(cur) ? ASK_JSONATA : cur; // JSONata may unwrap or flatten an array result
  };
}


/**
 * `{"k": v, ...}` over one object (JSONata groups an array input: its answer): a key whose value
 * is undefined is left out, as JSONata does; its objects have no prototype, like JSONata's.
 */
function objectOf(pairs: [Node, Node][]): FastPath | undefined {
  if (!pairs.every(([k]) => k.type === 'string' && only(k, PLAIN_STEP_FIELDS))) return undefined;
  const keys = pairs.map(([k]) => String(k.value));
  if (new Set(keys).size !== keys.length || keys.some((k) => k === '_jsonata_lambda' || k === '_jsonata_function')) return undefined;
  const values = pairs.map(([, v]) => compileFastPath(v) ?? ask);
  return (input) => {
    if (Array.isArray(input)) return ASK_JSONATA;
    const out: Record<string, unknown> = Object.create(null);
    for (let i = 0; i < keys.length; i++) {
      const v = values[i]!(input);
      if (v === ASK_JSONATA) return ASK_JSONATA;
      if (v !== undefined) out[keys[i]!] = v;
    }
    return out;
  };
}

/** `c ? a : b` (or without `: b`), c cast as JSONata's $boolean does for scalars. */
function conditionOf(node: Node): FastPath | undefined {
  const test = compileFastPath(node.condition);
  if (!test) return undefined;
  const then = compileFastPath(node.then) ?? ask;
  const otherwise = node.else === undefined ? () => undefined : (compileFastPath(node.else) ?? ask);
  return (input) => {
    const c = test(input);
    if (c === ASK_JSONATA || (c !== null && typeof c === 'object')) return ASK_JSONATA;
    const truthy = typeof c === 'string' ? c.length > 0 : typeof c === 'number' ? c !== 0 : c === true;
    return truthy ? then(input) : otherwise(input);
  };
}

/** `$exists(x)`: whether x is defined. */
function existsOf(node: Node): FastPath | undefined {
  const proc = node.procedure as Node | undefined;
  const args = node.arguments as Node[] | undefined;
  if (node.value !== '(' || proc?.type !== 'variable' || proc.value !== 'exists' || !only(proc, PLAIN_STEP_FIELDS) || args?.length !== 1) return undefined;
  const arg = compileFastPath(args[0]);
  if (!arg) return undefined;
  return (input) => {
    const v = arg(input);
    return v === ASK_JSONATA ? v : v !== undefined;
  };
}

/** JSONata returns arrays tagged as "sequences"; hand out plain JSON values. */
function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return Array.from(value, normalise);
  return value;
}

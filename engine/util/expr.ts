// Expressions in descriptors (mappings, pricing, rules) are JSONata, compiled once when the
// descriptor is compiled. The most common shapes are answered synchronously without JSONata's
// per-node promises: literals, paths of plain names over objects and arrays (`output.task_id`,
// `output.results.url`, `$result.images`), `$count` and `$exists` of them, and the request
// bodies built of them (object constructors with literal keys, `cond ? a : b`; model D's submit
// body through JSONata was 48 KB of a task life's 187 KB of garbage, measured with
// bench/allocation.ts). Everything else, and any evaluation that meets a branch the fast path
// does not know, is JSONata's to answer, for the whole expression.
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
      const value = fast(input, bindings);
      return value === ASK_JSONATA ? viaJsonata(input, bindings) : Promise.resolve(normalise(value));
    },
  };
}

/** What the fast path answers when it meets what it does not know: JSONata must answer. */
export const ASK_JSONATA: unique symbol = Symbol('ask JSONata');

/** The caller's variables (`$result`, `$request`...) are read from `bindings`, as JSONata does. */
export type FastPath = (input: unknown, bindings?: Record<string, unknown>) => unknown;

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
 * A synchronous evaluator for a literal, a path of plain names (over objects and arrays, from the
 * input or from a variable the caller binds), an object constructor with literal keys, a condition,
 * `$exists(...)` or `$count(...)`, built of the same; undefined for anything else. Inside an object
 * or a branch, a part it does not know hands the whole expression to JSONata when reached.
 */
export function compileFastPath(ast: unknown): FastPath | undefined {
  const node = ast as Node;
  if (node.type === 'string' || node.type === 'number' || node.type === 'value') {
    const value = node.value;
    return () => value;
  }
  if (node.type === 'unary' && node.value === '{' && only(node, OBJECT_FIELDS)) return objectOf(node.lhs as [Node, Node][]);
  if (node.type === 'condition' && only(node, CONDITION_FIELDS)) return conditionOf(node);
  if (node.type === 'function' && only(node, CALL_FIELDS)) return callOf(node);
  return pathOf(node);
}

/**
 * A path of plain names (`output.results.url`), or of names after a variable the caller binds
 * (`$result.images`), with JSONata's sequence rules: a step over an array maps over its items and
 * flattens what they give one level; a path whose last step finds one array gives that array; no
 * value gives undefined, one value itself, several an array of them.
 */
function pathOf(node: Node): FastPath | undefined {
  const steps = node.type === 'path' && Object.keys(node).every((k) => k === 'steps' || PLAIN_STEP_FIELDS.has(k)) ? node.steps! : [node];
  if (!steps.every((s, i) => (s.type === 'name' || (i === 0 && s.type === 'variable')) && only(s, PLAIN_STEP_FIELDS))) return undefined;
  const variable = steps[0]!.type === 'variable' ? String(steps[0]!.value) : undefined;
  if (variable === '' || variable === '$') return undefined; // the context and the root: JSONata's
  const keys = steps.map((s) => String(s.value));
  return (input, bindings) => {
    let value: unknown = input;
    let i = 0;
    if (variable !== undefined) {
      // A name the caller did not bind is one of JSONata's functions, or nothing: JSONata's to say.
      if (!bindings || !Object.hasOwn(bindings, variable)) return ASK_JSONATA;
      value = bindings[variable];
      i = 1;
    }
    // Over objects, a step's sequence is one value: walked without building one (the common case).
    for (; i < keys.length && !Array.isArray(value); i++) {
      value = own(value, keys[i]!);
      if (value === undefined) return undefined;
    }
    if (i === keys.length) return value;
    // An array met before the last step: the input itself (JSONata takes it as one item), or a value found (its items).
    return sequenceFrom(i === 0 ? [value] : [...(value as unknown[])], keys, i);
  };
}

/** The rest of a path from step `from`, over a sequence of values, by JSONata's rules (pathOf). */
function sequenceFrom(sequence: unknown[], keys: readonly string[], from: number): unknown {
  for (let i = from; i < keys.length; i++) {
    const found: unknown[] = [];
    let oneIsSequence = false; // whether found's only value (if one) is a sequence JSONata made, not an array of the data
    for (const item of sequence) {
      if (Array.isArray(item)) {
        // A name over an array: its items' values, as a sequence (a lone value is unwrapped).
        const values = lookupAll(item, keys[i]!, []);
        if (values.length === 1) found.push(values[0]);
        else if (values.length > 1) {
          found.push(values);
          oneIsSequence = true;
        }
      } else {
        const value = own(item, keys[i]!);
        if (value !== undefined) found.push(value);
      }
    }
    if (i === keys.length - 1 && found.length === 1 && Array.isArray(found[0]) && !oneIsSequence) return found[0];
    sequence = [];
    for (const value of found) {
      if (Array.isArray(value)) for (const v of value) sequence.push(v);
      else sequence.push(value);
    }
    if (sequence.length === 0) return undefined;
  }
  return sequence.length === 1 ? sequence[0] : sequence;
}

/** The value of an object's own key (JSONata reads no inherited one), else undefined. */
function own(item: unknown, key: string): unknown {
  return item !== null && typeof item === 'object' && Object.hasOwn(item, key) ? (item as Record<string, unknown>)[key] : undefined;
}

/** JSONata's lookup of a name in an array: every item's value, arrays among them (and nested arrays of items) flattened, into `out`. */
function lookupAll(items: unknown[], key: string, out: unknown[]): unknown[] {
  for (const item of items) {
    if (Array.isArray(item)) lookupAll(item, key, out);
    else {
      const value = own(item, key);
      if (Array.isArray(value)) for (const v of value) out.push(v);
      else if (value !== undefined) out.push(value);
    }
  }
  return out;
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
  return (input, bindings) => {
    if (Array.isArray(input)) return ASK_JSONATA;
    const out: Record<string, unknown> = Object.create(null);
    for (let i = 0; i < keys.length; i++) {
      const v = values[i]!(input, bindings);
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
  return (input, bindings) => {
    const c = test(input, bindings);
    if (c === ASK_JSONATA || (c !== null && typeof c === 'object')) return ASK_JSONATA;
    const truthy = typeof c === 'string' ? c.length > 0 : typeof c === 'number' ? c !== 0 : c === true;
    return truthy ? then(input, bindings) : otherwise(input, bindings);
  };
}

/** JSONata's functions answered here, of their one argument's value (undefined when it has none). */
const FUNCTIONS = new Map<string, (value: unknown) => unknown>([
  ['exists', (value) => value !== undefined],
  // `<a:n>`: a value that is not an array counts as an array of one.
  ['count', (value) => (value === undefined ? 0 : Array.isArray(value) ? value.length : 1)],
]);

/** `$exists(x)`, `$count(x)`; JSONata's if the caller binds a variable of the function's name. */
function callOf(node: Node): FastPath | undefined {
  const proc = node.procedure as Node | undefined;
  const args = node.arguments as Node[] | undefined;
  if (node.value !== '(' || proc?.type !== 'variable' || !only(proc, PLAIN_STEP_FIELDS) || args?.length !== 1) return undefined;
  const name = String(proc.value);
  const fn = FUNCTIONS.get(name);
  const arg = fn && compileFastPath(args[0]);
  if (!fn || !arg) return undefined;
  return (input, bindings) => {
    if (bindings && Object.hasOwn(bindings, name)) return ASK_JSONATA;
    const v = arg(input, bindings);
    return v === ASK_JSONATA ? v : fn(v);
  };
}

/** JSONata returns arrays tagged as "sequences"; hand out plain JSON values. */
function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return Array.from(value, normalise);
  return value;
}

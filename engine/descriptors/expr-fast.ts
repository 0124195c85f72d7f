// A synchronous fast path for descriptor expressions. JSONata evaluates asynchronously (a
// promise per node), which made it the largest single cost of an async create (~20 µs a task,
// plus the garbage). Here a parsed JSONata AST becomes a tree of plain closures for the shapes
// descriptors use on the hot path: literals, field paths, variables and blocks, arithmetic,
// comparison and boolean operators, conditionals (and `??`), object and array constructors,
// and a few built-in functions.
//
// Exactness comes first: the closures model JSONata only where its semantics are simple — no
// sequences. Whenever evaluation meets anything else (a path stepping through an array, a
// filter, a type JSONata would reject, an unsupported node or function) it throws FALLBACK and
// the caller evaluates the whole expression with JSONata itself. So a fast result is always
// JSONata's result; test/descriptors/expr-fast.test.ts checks that over every descriptor's
// expressions and fixtures.

/** Thrown when the fast path cannot answer exactly; the caller then asks JSONata. */
export const FALLBACK: unique symbol = Symbol('jsonata fallback');

interface Scope {
  readonly vars: Map<string, unknown>;
  readonly parent: Scope | undefined;
  readonly bindings: Record<string, unknown> | undefined;
  readonly root: unknown;
}

type Fn = (ctx: unknown, scope: Scope) => unknown;
export type FastExpr = (input: unknown, bindings?: Record<string, unknown>) => unknown;

// The AST as JSONata's parser hands it out (the fields read here).
interface Node {
  type: string;
  value?: unknown;
  steps?: Node[];
  stages?: { type: string; expr: Node }[];
  predicate?: unknown;
  group?: unknown;
  keepArray?: boolean;
  keepSingletonArray?: boolean;
  focus?: unknown;
  index?: unknown;
  tuple?: unknown;
  ancestor?: unknown;
  lhs?: Node | [Node, Node][];
  rhs?: Node;
  expression?: Node;
  expressions?: Node[];
  condition?: Node;
  then?: Node;
  else?: Node;
  procedure?: Node;
  arguments?: Node[];
}

const fallback: Fn = () => {
  throw FALLBACK;
};

/** Compile a JSONata AST; the result throws FALLBACK where JSONata must answer instead. */
export function compileFast(ast: unknown): FastExpr {
  const fn = compile(ast as Node);
  return (input, bindings) => {
    if (Array.isArray(input)) throw FALLBACK; // JSONata wraps array inputs in a sequence
    return fn(input, { vars: new Map(), parent: undefined, bindings, root: input });
  };
}

function compile(node: Node): Fn {
  // Filters, grouping, sorting, focus/index bindings and `[]` mean sequences: JSONata's.
  if (node.predicate || node.group || node.keepArray || node.focus || node.index || node.tuple || node.ancestor) return fallback;
  switch (node.type) {
    case 'string':
    case 'number':
    case 'value': {
      const v = node.value;
      return () => v;
    }
    case 'path':
      return compilePath(node);
    case 'name': {
      if (node.stages) return fallback;
      const key = String(node.value);
      return (ctx) => lookup(ctx, key);
    }
    case 'variable':
      return compileVariable(String(node.value));
    case 'block': {
      const parts = node.expressions!.map(compile);
      return (ctx, scope) => {
        const inner: Scope = { vars: new Map(), parent: scope, bindings: scope.bindings, root: scope.root };
        let result: unknown;
        for (const p of parts) result = p(ctx, inner);
        return result;
      };
    }
    case 'bind': {
      const name = String((node.lhs as Node).value);
      if (Object.hasOwn(BUILTINS, name)) return fallback;
      const rhs = compile(node.rhs!);
      return (ctx, scope) => {
        const v = rhs(ctx, scope);
        scope.vars.set(name, v);
        return v;
      };
    }
    case 'condition': {
      const cond = compile(node.condition!);
      const then = compile(node.then!);
      const otherwise = node.else ? compile(node.else) : undefined;
      return (ctx, scope) => (boolean(cond(ctx, scope)) ? then(ctx, scope) : otherwise?.(ctx, scope));
    }
    case 'unary':
      return compileUnary(node);
    case 'binary':
      return compileBinary(node);
    case 'function':
      return compileFunction(node);
    default:
      return fallback; // regex, lambda, wildcard, descendant, apply, transform, sort, ...
  }
}

/** A field lookup on one value: objects only; an array would start a sequence. */
function lookup(ctx: unknown, key: string): unknown {
  if (ctx === null || typeof ctx !== 'object') return undefined;
  if (Array.isArray(ctx)) throw FALLBACK;
  if (!Object.prototype.hasOwnProperty.call(ctx, key)) return undefined;
  const v = (ctx as Record<string, unknown>)[key];
  if (typeof v === 'function') throw FALLBACK;
  return v;
}

function compilePath(node: Node): Fn {
  const steps = node.steps!;
  if (node.keepSingletonArray) return fallback;
  const first = steps[0]!;
  if (first.type !== 'name' && first.type !== 'variable') return fallback;
  const fns: Fn[] = [];
  for (const [i, step] of steps.entries()) {
    if (step.predicate || step.group || step.focus || step.index || step.tuple || step.keepArray) return fallback;
    if (i > 0 && step.type !== 'name') return fallback;
    const get = step.type === 'variable' ? compileVariable(String(step.value)) : (() => {
      const key = String(step.value);
      return (ctx: unknown) => lookup(ctx, key);
    })();
    const index = indexStage(step);
    if (index === null) return fallback;
    fns.push(index === undefined ? get : (ctx, scope) => pick(get(ctx, scope), index));
  }
  const last = fns.length - 1;
  return (ctx, scope) => {
    let cur = ctx;
    for (let i = 0; i <= last; i++) {
      cur = fns[i]!(cur, scope);
      if (cur === undefined) return undefined;
      // A value met mid-path that is an array makes the next step map over it (a sequence).
      if (i < last && Array.isArray(cur)) throw FALLBACK;
    }
    return cur;
  };
}

/** `name[3]` / `name[-1]`: a constant index; undefined when there is none, null when unsupported. */
function indexStage(step: Node): number | undefined | null {
  if (!step.stages) return undefined;
  const [stage, ...more] = step.stages;
  if (more.length || stage!.type !== 'filter' || stage!.expr.type !== 'number') return null;
  return Math.floor(Number(stage!.expr.value));
}

function pick(value: unknown, index: number): unknown {
  if (value === undefined) return undefined;
  const arr = Array.isArray(value) ? value : [value];
  const item: unknown = arr[index < 0 ? arr.length + index : index];
  if (Array.isArray(item)) throw FALLBACK; // JSONata splices a nested array into the sequence
  return item;
}

function compileVariable(name: string): Fn {
  if (name === '') return (ctx) => ctx;
  if (name === '$') return (_ctx, scope) => scope.root;
  return (_ctx, scope) => {
    for (let s: Scope | undefined = scope; s; s = s.parent) if (s.vars.has(name)) return s.vars.get(name);
    if (scope.bindings && Object.prototype.hasOwnProperty.call(scope.bindings, name)) return scope.bindings[name];
    if (Object.hasOwn(BUILTINS, name) || Object.hasOwn(OTHER_BUILTINS, name)) throw FALLBACK; // a function value
    return undefined;
  };
}

function compileUnary(node: Node): Fn {
  if (node.value === '-') {
    const e = compile(node.expression!);
    return (ctx, scope) => {
      const v = e(ctx, scope);
      if (v === undefined) return undefined;
      if (typeof v !== 'number') throw FALLBACK;
      return -v;
    };
  }
  if (node.value === '[') {
    const items = node.expressions!.map((n) => ({ fn: compile(n), nested: n.type === 'unary' && n.value === '[' }));
    return (ctx, scope) => {
      const out: unknown[] = [];
      for (const { fn, nested } of items) {
        const v = fn(ctx, scope);
        if (v === undefined) continue;
        if (!nested && Array.isArray(v)) out.push(...v);
        else out.push(v);
      }
      return out;
    };
  }
  if (node.value === '{') {
    const pairs = (node.lhs as [Node, Node][]).map(([k, v]) => ({ key: k, value: compile(v) }));
    const keys = pairs.map((p) => (p.key.type === 'string' ? String(p.key.value) : undefined));
    // Keys must be literal and distinct (JSONata groups by computed keys).
    if (keys.some((k) => k === undefined) || new Set(keys).size !== keys.length) return fallback;
    return (ctx, scope) => {
      if (Array.isArray(ctx)) throw FALLBACK;
      const out: Record<string, unknown> = {};
      for (let i = 0; i < pairs.length; i++) {
        const v = pairs[i]!.value(ctx, scope);
        if (v !== undefined) out[keys[i]!] = v;
      }
      return out;
    };
  }
  return fallback;
}

function compileBinary(node: Node): Fn {
  const op = String(node.value);
  const lhs = compile(node.lhs as Node);
  const rhs = compile(node.rhs!);
  switch (op) {
    case 'and':
      return (ctx, scope) => (boolean(lhs(ctx, scope)) ? boolean(rhs(ctx, scope)) === true : false);
    case 'or':
      return (ctx, scope) => (boolean(lhs(ctx, scope)) ? true : boolean(rhs(ctx, scope)) === true);
    case '+':
    case '-':
    case '*':
    case '/':
    case '%': {
      const f = ARITHMETIC[op];
      return (ctx, scope) => {
        const a = lhs(ctx, scope);
        const b = rhs(ctx, scope);
        if ((a !== undefined && typeof a !== 'number') || (b !== undefined && typeof b !== 'number')) throw FALLBACK;
        if (a === undefined || b === undefined) return undefined;
        const r = f(a, b);
        if (!Number.isFinite(r)) throw FALLBACK;
        return r;
      };
    }
    case '=':
    case '!=':
      return (ctx, scope) => {
        const a = lhs(ctx, scope);
        const b = rhs(ctx, scope);
        if (a === undefined || b === undefined) return false;
        if ((a !== null && typeof a === 'object') || (b !== null && typeof b === 'object')) throw FALLBACK; // deep equality
        return op === '=' ? a === b : a !== b;
      };
    case '<':
    case '<=':
    case '>':
    case '>=': {
      const f = COMPARE[op];
      return (ctx, scope) => {
        const a = lhs(ctx, scope);
        const b = rhs(ctx, scope);
        const comparable = (x: unknown) => x === undefined || typeof x === 'number' || typeof x === 'string';
        if (!comparable(a) || !comparable(b)) throw FALLBACK;
        if (a === undefined || b === undefined) return undefined;
        if (typeof a !== typeof b) throw FALLBACK;
        return f(a as never, b as never);
      };
    }
    case '&':
      return (ctx, scope) => toText(lhs(ctx, scope)) + toText(rhs(ctx, scope));
    default:
      return fallback; // '..', 'in'
  }
}

const ARITHMETIC: Record<string, (a: number, b: number) => number> = {
  '+': (a, b) => a + b,
  '-': (a, b) => a - b,
  '*': (a, b) => a * b,
  '/': (a, b) => a / b,
  '%': (a, b) => a % b,
};
const COMPARE: Record<string, (a: number | string, b: number | string) => boolean> = {
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
  '>': (a, b) => a > b,
  '>=': (a, b) => a >= b,
};

/** JSONata's effective boolean value (undefined stays undefined). */
function boolean(v: unknown): boolean | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string') return v.length > 0;
  if (typeof v === 'number') return v !== 0;
  if (v === null) return false;
  if (Array.isArray(v)) throw FALLBACK;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  throw FALLBACK;
}

/** `$string` of a value the fast path can render exactly (strings, integers, booleans, null). */
function toText(v: unknown): string {
  if (v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean' || v === null) return String(v);
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  throw FALLBACK; // floats (15 significant digits), objects, arrays
}

const numbers = (v: unknown): number[] | undefined => {
  if (v === undefined) return undefined;
  const arr = Array.isArray(v) ? v : [v];
  for (const x of arr) if (typeof x !== 'number') throw FALLBACK;
  return arr as number[];
};
const number = (v: unknown): number => {
  if (typeof v !== 'number') throw FALLBACK;
  return v;
};
const text = (v: unknown): string | undefined => {
  if (v !== undefined && typeof v !== 'string') throw FALLBACK;
  return v;
};

// Built-ins with their JSONata semantics for the argument types accepted here (anything else:
// FALLBACK, so JSONata raises its own type errors). `arity` is the number of arguments modelled.
const BUILTINS: Record<string, { arity: number[]; fn: (...args: unknown[]) => unknown }> = {
  exists: { arity: [1], fn: (v) => v !== undefined },
  count: { arity: [1], fn: (v) => (v === undefined ? 0 : Array.isArray(v) ? v.length : 1) },
  not: { arity: [1], fn: (v) => (v === undefined ? undefined : !boolean(v)) },
  boolean: { arity: [1], fn: (v) => boolean(v) },
  string: { arity: [1], fn: (v) => (v === undefined ? undefined : toText(v)) },
  number: {
    arity: [1],
    fn: (v) => {
      if (v === undefined || typeof v === 'number') return v;
      if (typeof v === 'boolean') return v ? 1 : 0;
      throw FALLBACK; // numeric strings: JSONata's own parsing rules
    },
  },
  ceil: { arity: [1], fn: (v) => (v === undefined ? undefined : Math.ceil(number(v))) },
  floor: { arity: [1], fn: (v) => (v === undefined ? undefined : Math.floor(number(v))) },
  sum: { arity: [1], fn: (v) => numbers(v)?.reduce((a, b) => a + b, 0) },
  max: { arity: [1], fn: (v) => { const a = numbers(v); return a && a.length ? Math.max(...a) : undefined; } },
  min: { arity: [1], fn: (v) => { const a = numbers(v); return a && a.length ? Math.min(...a) : undefined; } },
  uppercase: { arity: [1], fn: (v) => text(v)?.toUpperCase() },
  lowercase: { arity: [1], fn: (v) => text(v)?.toLowerCase() },
  join: {
    arity: [1, 2],
    fn: (v, sep) => {
      if (v === undefined) return undefined;
      const arr = Array.isArray(v) ? v : [v];
      if (arr.some((x) => typeof x !== 'string') || (sep !== undefined && typeof sep !== 'string')) throw FALLBACK;
      return arr.join(sep ?? '');
    },
  },
};
// Other JSONata functions: a reference to one yields a function value, which only JSONata models.
const OTHER_BUILTINS: Record<string, true> = Object.fromEntries(
  ['contains', 'match', 'substring', 'substringBefore', 'substringAfter', 'length', 'trim', 'pad', 'split', 'replace', 'round', 'abs', 'power', 'sqrt', 'random', 'average', 'append', 'reverse', 'sort', 'distinct', 'keys', 'lookup', 'spread', 'merge', 'each', 'sift', 'map', 'filter', 'reduce', 'zip', 'shuffle', 'now', 'millis', 'fromMillis', 'toMillis', 'type', 'formatNumber', 'formatBase', 'formatInteger', 'parseInteger', 'base64encode', 'base64decode', 'encodeUrl', 'encodeUrlComponent', 'decodeUrl', 'decodeUrlComponent', 'error', 'assert', 'single', 'eval', 'clone'].map((n) => [n, true]),
);

function compileFunction(node: Node): Fn {
  const proc = node.procedure!;
  if (proc.type !== 'variable') return fallback;
  const name = String(proc.value);
  const builtin = Object.hasOwn(BUILTINS, name) ? BUILTINS[name] : undefined;
  const args = node.arguments!.map(compile);
  if (!builtin || !builtin.arity.includes(args.length)) return fallback;
  return (ctx, scope) => {
    // A variable of the same name (bound in a block or passed in) would shadow the built-in.
    for (let s: Scope | undefined = scope; s; s = s.parent) if (s.vars.has(name)) throw FALLBACK;
    if (scope.bindings && Object.prototype.hasOwnProperty.call(scope.bindings, name)) throw FALLBACK;
    const values = args.map((a) => a(ctx, scope));
    return builtin.fn(...values);
  };
}

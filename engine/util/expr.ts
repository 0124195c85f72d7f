// Expressions in descriptors (mappings, pricing, rules) are JSONata, compiled once when the
// descriptor is compiled. Literals and plain dotted paths (`output.task_id`, `size`), the most
// common shapes, are answered synchronously without JSONata's per-node promises; everything
// else, and any path that meets an array (JSONata's sequences), is JSONata's to answer.
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

/** A synchronous evaluator for a literal or a dotted path of plain names; undefined for anything else. */
export function compileFastPath(ast: unknown): FastPath | undefined {
  const node = ast as Node;
  if (node.type === 'string' || node.type === 'number' || node.type === 'value') {
    const value = node.value;
    return () => value;
  }
  const steps = node.type === 'path' && Object.keys(node).every((k) => k === 'steps' || PLAIN_STEP_FIELDS.has(k)) ? node.steps! : [node];
  if (!steps.every((s) => s.type === 'name' && Object.keys(s).every((k) => PLAIN_STEP_FIELDS.has(k)))) return undefined;
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

/** JSONata returns arrays tagged as "sequences"; hand out plain JSON values. */
function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return Array.from(value, normalise);
  return value;
}

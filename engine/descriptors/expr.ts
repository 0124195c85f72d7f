// Expressions in descriptors (mappings, pricing, rules) are JSONata, compiled once when the
// descriptor is compiled. A plain dotted path (`output.task_id`, `data.items[0].url`) is read by
// a direct property walk instead, because it is the common case and JSONata costs microseconds.
import jsonata from 'jsonata';

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

const DOTTED = /^[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*|\[\d+\])*$/;
const SEGMENT = /[A-Za-z_][\w]*|\[\d+\]/g;

/** Compile an expression; throws ExprError (with the character position) when it does not parse. */
export function compileExpr(source: string): CompiledExpr {
  const trimmed = source.trim();
  const jsonataExpr = compileJsonata(trimmed);
  if (!DOTTED.test(trimmed)) return jsonataExpr;
  const segments = (trimmed.match(SEGMENT) ?? []).map((s) => (s.startsWith('[') ? Number(s.slice(1, -1)) : s));
  return {
    source: trimmed,
    evaluate(input, bindings) {
      let cur: unknown = input;
      for (const seg of segments) {
        if (cur === null || cur === undefined) return Promise.resolve(undefined);
        // JSONata maps a path over arrays; keep those semantics by deferring to it.
        if (Array.isArray(cur) && typeof seg === 'string') return jsonataExpr.evaluate(input, bindings);
        cur = (cur as Record<string | number, unknown>)[seg];
      }
      return Promise.resolve(cur);
    },
  };
}

function compileJsonata(source: string): CompiledExpr {
  let expr: ReturnType<typeof jsonata>;
  try {
    expr = jsonata(source);
  } catch (err) {
    const e = err as { message?: string; position?: number };
    throw new ExprError(e.message ?? String(err), e.position);
  }
  return {
    source,
    async evaluate(input, bindings) {
      try {
        return normalise(await expr.evaluate(input, bindings));
      } catch (err) {
        const e = err as { message?: string; position?: number };
        throw new ExprError(`expression \`${source}\` failed: ${e.message ?? String(err)}`, e.position);
      }
    },
  };
}

/** JSONata returns arrays tagged as "sequences"; hand out plain JSON values. */
function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return Array.from(value, normalise);
  return value;
}

// Expressions in descriptors (mappings, pricing, rules) are JSONata, compiled once when the
// descriptor is compiled. Each is also compiled to synchronous closures (./expr-fast.ts), which
// answer the common shapes exactly and hand everything else back to JSONata.
import jsonata from 'jsonata';
import { compileFast } from './expr-fast.ts';

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
  const { expr, compiled } = compileJsonata(trimmed);
  const fast = compileFast(expr.ast());
  return {
    source: trimmed,
    evaluate(input, bindings) {
      try {
        return Promise.resolve(fast(input, bindings));
      } catch {
        return compiled.evaluate(input, bindings); // FALLBACK: JSONata answers (and raises its own errors)
      }
    },
  };
}

function compileJsonata(source: string): { expr: ReturnType<typeof jsonata>; compiled: CompiledExpr } {
  let expr: ReturnType<typeof jsonata>;
  try {
    expr = jsonata(source);
  } catch (err) {
    const e = err as { message?: string; position?: number };
    throw new ExprError(e.message ?? String(err), e.position);
  }
  const compiled: CompiledExpr = {
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
  return { expr, compiled };
}

/** JSONata returns arrays tagged as "sequences"; hand out plain JSON values. */
function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return Array.from(value, normalise);
  return value;
}

// Plain paths into JSON, compiled once: `usage.prompt_tokens` (a getter and a setter) and
// `messages[*].content[*]` (every item of nested arrays). The proxy hot path reads usage and
// model ids with these, never with an expression engine.

export type Getter = (value: unknown) => unknown;

export function compileGetter(path: string): Getter {
  const keys = path.split('.');
  if (keys.length === 1) {
    const k = keys[0]!;
    return (v) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined);
  }
  return (v) => {
    let cur = v;
    for (const k of keys) {
      if (cur === null || typeof cur !== 'object') return undefined;
      cur = (cur as Record<string, unknown>)[k];
    }
    return cur;
  };
}

/** Set `path` to `value` in `target`, creating (or replacing non-object) parents. */
export function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let cur = target;
  for (const k of keys.slice(0, -1)) {
    const next = cur[k];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) cur[k] = {};
    cur = cur[k] as Record<string, unknown>;
  }
  cur[keys[keys.length - 1]!] = value;
}

/** The first segment of a dotted path (the top-level key). */
export const topKey = (path: string): string => path.split('.')[0]!;

interface Step {
  key: string;
  each: boolean;
}

/**
 * `a[*].b[*]`: calls `visit(array, index)` for every item reached, last items first, so the
 * visitor may splice the array it is given.
 */
export function compileItemsWalker(path: string): (root: unknown, visit: (array: unknown[], index: number) => void) => void {
  const steps: Step[] = path.split('.').map((s) => (s.endsWith('[*]') ? { key: s.slice(0, -3), each: true } : { key: s, each: false }));
  const walk = (node: unknown, i: number, visit: (array: unknown[], index: number) => void): void => {
    if (node === null || typeof node !== 'object') return;
    const step = steps[i]!;
    const child = (node as Record<string, unknown>)[step.key];
    const last = i === steps.length - 1;
    if (!step.each) {
      if (!last) walk(child, i + 1, visit);
      return;
    }
    if (!Array.isArray(child)) return;
    for (let j = child.length - 1; j >= 0; j--) {
      if (last) visit(child, j);
      else walk(child[j], i + 1, visit);
    }
  };
  return (root, visit) => walk(root, 0, visit);
}

/** `gpt-4o*` matches by prefix, anything else exactly. */
export function globMatcher(patterns: readonly string[]): (id: string) => boolean {
  const exact = new Set(patterns.filter((p) => !p.endsWith('*')));
  const prefixes = patterns.filter((p) => p.endsWith('*')).map((p) => p.slice(0, -1));
  return (id) => exact.has(id) || prefixes.some((p) => id.startsWith(p));
}

// JSON pointers with a `*` wildcard (every item of an array), as `request.media` and
// `request.normalise` use them: `/reference_images/*`, `/elements/*/frontal_image`.

export interface PointerHit {
  /** The concrete pointer, e.g. /reference_images/3 */
  pointer: string;
  value: unknown;
  set(value: unknown): void;
}

export function parsePointer(at: string): string[] {
  if (at === '' || at === '/') return [];
  return at.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** Every present value the pattern names (absent and null values are not hits). */
export function resolvePointer(root: unknown, segments: readonly string[]): PointerHit[] {
  const out: PointerHit[] = [];
  const walk = (node: unknown, i: number, path: string, parent: Record<string, unknown> | unknown[] | undefined, key: string | number | undefined) => {
    if (i === segments.length) {
      if (node === undefined || node === null || parent === undefined || key === undefined) return;
      out.push({ pointer: path, value: node, set: (v) => { (parent as Record<string | number, unknown>)[key] = v; } });
      return;
    }
    const seg = segments[i]!;
    if (seg === '*') {
      if (Array.isArray(node)) node.forEach((item, j) => walk(item, i + 1, `${path}/${j}`, node, j));
      return;
    }
    if (Array.isArray(node)) {
      if (!/^(0|[1-9][0-9]*)$/.test(seg)) return;
      const j = Number(seg);
      walk(node[j], i + 1, `${path}/${j}`, node, j);
    } else if (node && typeof node === 'object') {
      const obj = node as Record<string, unknown>;
      if (Object.prototype.hasOwnProperty.call(obj, seg)) walk(obj[seg], i + 1, `${path}/${escape(seg)}`, obj, seg);
    }
  };
  walk(root, 0, '', undefined, undefined);
  return out;
}

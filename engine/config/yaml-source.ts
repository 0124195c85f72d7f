// Reads a YAML file keeping source positions, so every problem found later (schema errors,
// expressions that do not compile, missing environment variables) is reported as
// `file:line:col  /json/pointer  message` — the form reviewers and CI annotations read.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, visit, type Document, type Node } from 'yaml';

export interface Problem {
  file: string;
  line: number;
  col: number;
  pointer: string;
  message: string;
}

export function formatProblem(p: Problem): string {
  return `${p.file}:${p.line}:${p.col}  ${p.pointer || '/'}  ${p.message}`;
}

/** Thrown when loading finds problems; carries all of them, each with its position. */
export class LoadError extends Error {
  readonly problems: Problem[];
  constructor(problems: Problem[]) {
    super(problems.map(formatProblem).join('\n'));
    this.name = 'LoadError';
    this.problems = problems;
  }
}

export interface YamlSource {
  readonly file: string;
  readonly value: unknown;
  /** Line and column (1-based) of the node a JSON pointer names, or of its nearest existing parent. */
  locate(pointer: string): { line: number; col: number };
  problem(pointer: string, message: string): Problem;
}

export interface ReadYamlOptions {
  /** Replace `${VAR}` and `${VAR:-default}` in string scalars from this environment. */
  env?: Record<string, string | undefined>;
  /** Path shown in reports (default: relative to the working directory). */
  displayPath?: string;
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export function readYaml(file: string, opts: ReadYamlOptions = {}): YamlSource {
  const text = readFileSync(file, 'utf8');
  return parseYaml(text, opts.displayPath ?? (relative(process.cwd(), file) || file), opts);
}

export function parseYaml(text: string, displayPath: string, opts: ReadYamlOptions = {}): YamlSource {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const pos = (offset: number) => {
    const { line, col } = lineCounter.linePos(offset);
    return { line, col };
  };
  const problems: Problem[] = [];
  for (const err of doc.errors) {
    const { line, col } = pos(err.pos[0]);
    problems.push({ file: displayPath, line, col, pointer: '', message: err.message.split('\n')[0]! });
  }
  if (problems.length) throw new LoadError(problems);

  if (opts.env) interpolateEnv(doc, opts.env, (node, pointer, message) => {
    const { line, col } = pos(node.range?.[0] ?? 0);
    problems.push({ file: displayPath, line, col, pointer, message });
  });
  if (problems.length) throw new LoadError(problems);

  const source: YamlSource = {
    file: displayPath,
    value: doc.toJS({ maxAliasCount: 100 }),
    locate(pointer) {
      return pos(offsetOf(doc, pointer));
    },
    problem(pointer, message) {
      const { line, col } = source.locate(pointer);
      return { file: displayPath, line, col, pointer, message };
    },
  };
  return source;
}

function interpolateEnv(doc: Document, env: Record<string, string | undefined>, report: (node: Node, pointer: string, msg: string) => void): void {
  visit(doc, {
    Scalar(key, node, path) {
      if (typeof node.value !== 'string' || !node.value.includes('${')) return;
      node.value = node.value.replace(ENV_REF, (_m, name: string, fallback: string | undefined) => {
        const v = env[name];
        if (v !== undefined && v !== '') return v;
        if (fallback !== undefined) return fallback;
        report(node, pointerOf(key, path), `environment variable ${name} is not set (write \${${name}:-default} to give a default)`);
        return '';
      });
    },
  });
}

/** The JSON pointer of a scalar reached by yaml's visit(): map keys of the pairs above it, sequence indexes. */
function pointerOf(key: number | 'key' | 'value' | null, path: readonly unknown[]): string {
  const parts: string[] = [];
  for (let i = 0; i < path.length; i++) {
    const node = path[i];
    const child = path[i + 1];
    if (isSeq(node)) parts.push(String(child === undefined ? key : node.items.indexOf(child as never)));
    else if (node && typeof node === 'object' && 'key' in node && 'value' in node) {
      const k = (node as { key: unknown }).key;
      parts.push(isScalar(k) ? String(k.value) : String(k));
    }
  }
  return parts.map((p) => `/${p.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** Offset of the node a JSON pointer names: a map entry's key, a sequence item, or the nearest parent. */
function offsetOf(doc: Document, pointer: string): number {
  const segments = pointer.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  let node: unknown = doc.contents;
  let offset = (doc.contents as Node | null)?.range?.[0] ?? 0;
  for (const seg of segments) {
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? String(p.key.value) : String(p.key)) === seg);
      if (!pair) break;
      offset = (pair.key as Node | null)?.range?.[0] ?? offset;
      node = pair.value;
    } else if (isSeq(node)) {
      const item = node.items[Number(seg)] as Node | undefined;
      if (!item) break;
      offset = item.range?.[0] ?? offset;
      node = item;
    } else break;
  }
  return offset;
}

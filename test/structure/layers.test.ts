// The engine's layers, checked from its import graph (docs/architecture.md draws them).
//
// Every engine/**/*.ts file's imports are read (static `import … from`, `import type`,
// `export … from`, side-effect `import '…'`, dynamic `import('…')`; type-only imports count),
// each file is put in a folder and each folder in a layer, top to bottom:
//
//   composition root  the wiring, the files at engine/'s top: gateway.ts, services.ts, stores.ts (picks the
//                     store adapters), load-config.ts (runs each service's config resolver).
//                     May import anything; only offline tooling imports it.
//   http              engine/http: the front door and both planes' HTTP adapters (express,
//                     find-my-way).
//   services          tasks, billing, webhooks, proxy, limits, tenants, idempotency, sandbox (the
//                     built-in upstream simulator), docs (the OpenAPI document /openapi.json
//                     serves), results (the result store). Never import express or engine/http/.
//   compiler          engine/descriptors (descriptors → frozen route plans, pricing plans, JSON
//                     paths) and engine/validation (the Ajv request-validator compiler it uses).
//                     Imports ports and the ground floor, never a service or engine/http/.
//   ports             upstream (the upstream client, its auth schemes and failure mapping),
//                     events (the bus), jobs/scheduler.ts (the delayed-job queue), store/ports.ts
//                     (the list of every store port an adapter implements), media (the
//                     machinery the validator and tasks share: media checks, the blob store, the
//                     parse pool, and its SharedMediaStore port); and in each service folder the
//                     file named `store.ts` (that service's store interface) with the record files
//                     listed in PORT_FILES.
//   adapters          engine/store/memory, engine/store/redis, engine/store/files and
//                     engine/store/s3 (the result store's backends), each store's job scheduler beside it:
//                     import only ports, records, the ground floor and npm packages.
//   ground floor      errors, util (ids, clock, within, money, expressions, json bodies), log, metrics,
//                     tracing (OpenTelemetry spans), config (the config record and the positioned
//                     YAML reader), vocabulary (the task statuses every layer speaks): anyone may
//                     import them.
//   offline tooling   engine/cli, engine/tooling: operator tools; may import anything (the CLI
//                     also starts the gateway); nothing else imports them. engine/cluster (the
//                     `serve --workers` primary and its workers' side) is the CLI's, placed here.
//
// The test fails with a readable list on:
//   (a) an import cycle between engine folders, type-only imports included (store/memory,
//       store/redis, store/files and store/s3 count as their own folders; a service folder's port
//       files count as the folder, so a word two folders share lives on the ground floor, not in
//       one of them; the composition root and offline tooling are outside the graph);
//   (b) a service importing express or engine/http/;
//   (c) the compiler (descriptors, validation) importing a service or engine/http/;
//   (d) an adapter importing anything but ports, records, its own folder and the ground floor;
//   (e) runtime code importing offline tooling or the composition root;
//   (f) a port or the ground floor importing a layer above it (ports may use other ports and the
//       ground floor, the ground floor only itself);
//   (0) a folder that is in no layer (a new folder is placed here before it is judged).
// And, from each file's syntax tree, on rooms too big to read (see "Room sizes" below).
import { parse } from 'acorn';
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ENGINE = join(dirname(fileURLToPath(import.meta.url)), '../../engine');

const SERVICES = new Set(['tasks', 'billing', 'webhooks', 'proxy', 'limits', 'tenants', 'idempotency', 'sandbox', 'docs', 'results']);
const COMPILER = new Set(['descriptors', 'validation']);
const PORT_FOLDERS = new Set(['upstream', 'events', 'jobs', 'media', 'store']);
const PORT_FILES = new Set(['tasks/task.ts', 'tenants/types.ts', 'limits/config.ts']);
const ADAPTERS = new Set(['store/memory', 'store/redis', 'store/files', 'store/s3']);
const GROUND = new Set(['errors', 'util', 'log', 'config', 'metrics', 'tracing', 'vocabulary']);
const TOOLING = new Set(['cli', 'tooling', 'cluster']);
const HTTP = 'http';
const ROOT = 'root';

interface Edge { from: string; to: string; specifier: string }

/** engine-relative path → folder: the first segment, with the adapters and the root split out. */
function folderOf(file: string): string {
  if (!file.includes('/')) return ROOT;
  if (file.startsWith('store/memory/')) return 'store/memory';
  if (file.startsWith('store/redis/')) return 'store/redis';
  if (file.startsWith('store/files/')) return 'store/files';
  if (file.startsWith('store/s3/')) return 'store/s3';
  return file.slice(0, file.indexOf('/'));
}

function isPort(file: string): boolean {
  const folder = folderOf(file);
  return PORT_FOLDERS.has(folder) || PORT_FILES.has(file) || (SERVICES.has(folder) && file.endsWith('/store.ts'));
}

function engineFiles(dir = ENGINE): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return engineFiles(path);
    return entry.name.endsWith('.ts') ? [relative(ENGINE, path).split('\\').join('/')] : [];
  });
}

// `from '…'` closes every static import/export; `import '…'` and `import('…')` are the other two.
const SPECIFIER = /\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(?\s*['"]([^'"]+)['"]/g;

function importsOf(file: string): Edge[] {
  // Comments go first (they quote imports); a block comment counts only where a line starts with it,
  // so a string such as 'image/*' cannot swallow the code after it.
  const source = readFileSync(join(ENGINE, file), 'utf8').replace(/^\s*\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, '');
  return [...source.matchAll(SPECIFIER)].map((m) => {
    const specifier = m[1] ?? m[2];
    const to = specifier.startsWith('.') ? posix.normalize(posix.join(posix.dirname(file), specifier)) : specifier;
    return { from: file, to, specifier };
  });
}

const edges = engineFiles().flatMap(importsOf);
const local = edges.filter((e) => e.specifier.startsWith('.') && !e.to.startsWith('..'));
const show = (e: Edge) => `engine/${e.from} → ${e.specifier.startsWith('.') ? `engine/${e.to}` : e.specifier}`;

const crossFolder = local.filter((e) => folderOf(e.from) !== folderOf(e.to));

/** Tarjan's strongly connected components over the folder graph, each as its member folders. */
function folderCycles(): string[][] {
  const graph = new Map<string, Set<string>>();
  for (const e of crossFolder) {
    const [from, to] = [folderOf(e.from), folderOf(e.to)];
    if (from === ROOT || to === ROOT || TOOLING.has(from) || TOOLING.has(to)) continue;
    if (!graph.has(from)) graph.set(from, new Set());
    graph.get(from)!.add(to);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) components.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return components;
}

const LAYERS = [SERVICES, COMPILER, PORT_FOLDERS, ADAPTERS, GROUND, TOOLING, new Set([HTTP, ROOT])];

function violations(): string[] {
  const found: string[] = [];
  // A new folder must be given a layer here (and in docs/architecture.md) before it is judged.
  for (const folder of new Set(engineFiles().map(folderOf))) {
    if (!LAYERS.some((layer) => layer.has(folder))) found.push(`(0) engine/${folder}/ is in no layer: add it to this test's header and sets`);
  }
  for (const component of folderCycles()) {
    const members = new Set(component);
    found.push(`(a) import cycle between ${component.join(', ')}:`);
    for (const e of crossFolder) {
      if (members.has(folderOf(e.from)) && members.has(folderOf(e.to))) found.push(`      ${show(e)}`);
    }
  }
  for (const e of edges) {
    const from = folderOf(e.from);
    const to = e.specifier.startsWith('.') ? folderOf(e.to) : undefined;
    if (SERVICES.has(from) && (e.specifier === 'express' || to === HTTP)) found.push(`(b) service imports the HTTP layer: ${show(e)}`);
    if (COMPILER.has(from) && to !== undefined && ((SERVICES.has(to) && !isPort(e.to)) || to === HTTP)) found.push(`(c) compiler imports a service: ${show(e)}`);
    if (ADAPTERS.has(from) && to !== undefined && to !== from && !GROUND.has(to) && !isPort(e.to)) found.push(`(d) adapter imports a non-port: ${show(e)}`);
    if (to === ROOT && from !== ROOT && !TOOLING.has(from)) found.push(`(e) imports the composition root: ${show(e)}`);
    if (to !== undefined && TOOLING.has(to) && !TOOLING.has(from)) found.push(`(e) runtime code imports offline tooling: ${show(e)}`);
    if (to !== undefined && (PORT_FOLDERS.has(from) || GROUND.has(from)) && !GROUND.has(to) && !(PORT_FOLDERS.has(from) && (PORT_FOLDERS.has(to) || isPort(e.to)))) {
      found.push(`(f) ${GROUND.has(from) ? 'ground floor' : 'port'} imports a layer above it: ${show(e)}`);
    }
  }
  return found;
}

describe('engine layers (import graph)', () => {
  it('reads the imports it is meant to judge', () => {
    // Guards the reader itself: a regex that silently matched nothing would pass everything.
    expect(engineFiles()).to.include('gateway.ts');
    expect(local.some((e) => e.from === 'gateway.ts' && e.to === 'http/app.ts')).to.equal(true);
    expect(edges.some((e) => e.specifier === 'express')).to.equal(true);
  });

  it('has no folder cycle, no service → http, no compiler → service, no adapter → non-port', () => {
    const found = violations();
    if (found.length > 0) console.log(`\n  layer violations (${found.length}):\n  ${found.join('\n  ')}\n`);
    expect(found, found.join('\n')).to.deep.equal([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Room sizes, read from each file's syntax tree (its types stripped by node, which keeps every
// line where it was, then parsed by acorn):
//   (g) no engine file over MAX_FILE_LINES lines;
//   (h) no function (declaration, expression, arrow, method) over MAX_FUNCTION_LINES lines, from
//       its first line to its last, but for the debts listed in LONG_FUNCTIONS, which may only shrink;
//   (i) no GatewayError made with a bare number: errors are named from the catalogue
//       (engine/errors/catalogue.ts), `new GatewayError('resourceNotFound', …)`.

const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 80;

/**
 * Functions still over MAX_FUNCTION_LINES, each at most the lines it has now: a debt listed to be
 * paid, not a licence. One that grows fails, a new one fails, and an entry whose function is back
 * under the limit (or gone) fails until it is struck from this list.
 */
const LONG_FUNCTIONS: Readonly<Record<string, number>> = {};

interface SyntaxNode {
  type: string;
  loc: { start: { line: number }; end: { line: number } };
  [key: string]: unknown;
}

function syntaxOf(file: string): SyntaxNode {
  const js = stripTypeScriptTypes(readFileSync(join(ENGINE, file), 'utf8'), { mode: 'strip' });
  return parse(js, { ecmaVersion: 'latest', sourceType: 'module', locations: true }) as unknown as SyntaxNode;
}

function visitNodes(node: unknown, visit: (n: SyntaxNode) => void): void {
  if (Array.isArray(node)) {
    for (const n of node) visitNodes(n, visit);
    return;
  }
  if (!node || typeof node !== 'object' || typeof (node as SyntaxNode).type !== 'string') return;
  visit(node as SyntaxNode);
  for (const [k, v] of Object.entries(node)) if (k !== 'loc' && v && typeof v === 'object') visitNodes(v, visit);
}

const FUNCTIONS = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression']);

function sizeViolations(): string[] {
  const found: string[] = [];
  const listed = new Set(Object.keys(LONG_FUNCTIONS));
  for (const file of engineFiles()) {
    const text = readFileSync(join(ENGINE, file), 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > MAX_FILE_LINES) found.push(`(g) engine/${file} has ${lines} lines (at most ${MAX_FILE_LINES})`);
    visitNodes(syntaxOf(file), (n) => {
      const span = n.loc.end.line - n.loc.start.line + 1;
      if (FUNCTIONS.has(n.type) && span > MAX_FUNCTION_LINES) {
        const name = (n.id as { name?: string } | null)?.name ?? 'a function';
        const known = LONG_FUNCTIONS[`${file} ${name}`];
        listed.delete(`${file} ${name}`);
        if (known === undefined || span > known) found.push(`(h) engine/${file}:${n.loc.start.line} ${name} has ${span} lines (at most ${known ?? MAX_FUNCTION_LINES})`);
      }
      if (n.type === 'NewExpression' && (n.callee as { name?: string }).name === 'GatewayError') {
        const first = (n.arguments as Array<{ type: string; value?: unknown }>)[0];
        if (first?.type === 'Literal' && typeof first.value === 'number') found.push(`(i) engine/${file}:${n.loc.start.line} new GatewayError(${first.value}, …): name the catalogue entry`);
      }
    });
  }
  for (const stale of listed) found.push(`(h) ${stale} is listed in LONG_FUNCTIONS but no longer over ${MAX_FUNCTION_LINES} lines: strike it`);
  return found;
}

describe('engine rooms (syntax trees)', () => {
  it('reads the functions it is meant to judge', () => {
    // Guards the reader: a parse that found nothing would pass everything.
    let functions = 0;
    let errors = 0;
    visitNodes(syntaxOf('tasks/poll.ts'), (n) => {
      if (FUNCTIONS.has(n.type)) functions++;
      if (n.type === 'NewExpression' && (n.callee as { name?: string }).name === 'GatewayError') errors++;
    });
    expect(functions).to.be.greaterThan(5);
    expect(errors).to.be.greaterThan(0);
  });

  it(`has no file over ${MAX_FILE_LINES} lines, no function over ${MAX_FUNCTION_LINES} lines, no GatewayError with a bare number`, () => {
    const found = sizeViolations();
    if (found.length > 0) console.log(`\n  room violations (${found.length}):\n  ${found.join('\n  ')}\n`);
    expect(found, found.join('\n')).to.deep.equal([]);
  });
});

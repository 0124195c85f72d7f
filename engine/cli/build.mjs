// The engine as it ships: JavaScript compiled from engine/ into dist/ (tsconfig.build.json), built
// again whenever the sources changed. Node 24 could run the .ts files as they are, but its type
// stripper is a WebAssembly module whose memory never shrinks: stripping the engine's files at
// every start held about 49 MB of RSS for the life of the process (docs/performance.md, *The
// shipped start runs compiled JavaScript*). The `gateway` bin (gateway.mjs, so `npm start`) and
// the benchmarks start the gateway through shippedEntry(); `npm run build` and `npm ci` (prepare)
// run this file. Plain JavaScript: importing a .ts file here would load the stripper.
//
// dist/ mirrors engine/ folder for folder, so a path a module finds from its own URL
// (../../package.json, ../../schemas/, ../../console/) is the same from either.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENGINE = join(ROOT, 'engine');
export const DIST = join(ROOT, 'dist');
/** What the last good build was made from (sources()). */
const STAMP = join(DIST, '.sources');
/** Held (a directory: mkdir is atomic) by the process building; others wait for it. */
const LOCK = join(DIST, '.building');
const LOCK_STALE_MS = 120_000;
/** Files dist needs besides what tsc emits: tsc copies nothing that is not TypeScript. */
const COPIED = ['util/esm-worker.cjs'];
const CONFIGS = ['tsconfig.build.json', 'tsconfig.json'];

/** The inputs: the build's configs, then every file under engine/, in a stable order. */
function inputs() {
  const files = CONFIGS.map((f) => join(ROOT, f));
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else files.push(join(dir, e.name));
    }
  };
  walk(ENGINE);
  return files;
}

/**
 * What the last build was made from, in two forms. `stats`: each input's path, size and time, a
 * few milliseconds to take, so every start compares it (a file added, removed, saved or restored
 * with an older time differs). `content`: a hash of the files' bytes, taken only when the stats
 * differ, so that a copy or checkout that changed only the times is not taken for an edit.
 */
function sources(files) {
  return files.map((path) => {
    const s = statSync(path, { throwIfNoEntry: false });
    return `${relative(ROOT, path)} ${s ? `${s.size} ${s.mtimeMs}` : '-'}`;
  }).join('\n');
}

async function content(files) {
  const { createHash } = await import('node:crypto');
  const hash = createHash('sha256');
  for (const path of files) {
    hash.update(`${relative(ROOT, path)}\0`);
    if (existsSync(path)) hash.update(readFileSync(path));
  }
  return hash.digest('hex');
}

function stamp() {
  try {
    return JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch {
    return undefined; // never built, or a stamp from before this format
  }
}

/** dist/ was built from the sources as they are now. */
export async function isFresh() {
  const last = stamp();
  if (!last) return false;
  const files = inputs();
  const stats = sources(files);
  if (last.stats === stats) return true;
  if (last.content !== (await content(files))) return false;
  try {
    writeFileSync(STAMP, JSON.stringify({ ...last, stats })); // only the times moved: the next start is quick again
  } catch {
    /* a read-only install: compare the content each start */
  }
  return true;
}

/** The TypeScript compiler's script, or undefined where it is not installed (`npm ci --omit=dev`). */
function compiler() {
  try {
    return join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
  } catch {
    return undefined;
  }
}

/**
 * Build dist/ if it does not match the sources. Answers false, having built nothing, where
 * TypeScript is not installed; throws with the compiler's report if the sources do not compile.
 * Type errors do not stop it (`noCheck`: `npm run typecheck` checks types), syntax errors do.
 */
export async function build() {
  if (await isFresh()) return true;
  const tsc = compiler();
  if (!tsc) return false;
  mkdirSync(DIST, { recursive: true });
  await lock();
  try {
    if (await isFresh()) return true; // built by the process we waited for
    // Taken before compiling: a source saved meanwhile makes the next start build again.
    const files = inputs();
    const made = { stats: sources(files), content: await content(files) };
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`the TypeScript build (tsconfig.build.json) failed:\n${r.stdout}${r.stderr}${r.error?.message ?? ''}`);
    for (const f of COPIED) copyFileSync(join(ENGINE, f), join(DIST, f));
    prune(DIST);
    writeFileSync(STAMP, JSON.stringify(made));
    return true;
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

async function lock() {
  for (;;) {
    try {
      mkdirSync(LOCK);
      return;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    // A lock left by a build that died is taken over.
    const held = statSync(LOCK, { throwIfNoEntry: false });
    if (held && Date.now() - held.mtimeMs > LOCK_STALE_MS) rmSync(LOCK, { recursive: true, force: true });
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Removes what a deleted source left in dist/ (tsc never deletes an output). */
function prune(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name.startsWith('.')) continue; // the stamp, the lock, tsc's build info
    const path = join(dir, e.name);
    const source = join(ENGINE, relative(DIST, path));
    if (e.isDirectory()) {
      if (!existsSync(source)) rmSync(path, { recursive: true, force: true });
      else prune(path);
    } else if (e.name.endsWith('.js') && !existsSync(source.replace(/\.js$/, '.ts'))) rmSync(path, { force: true });
  }
}

/**
 * The file `gateway` runs: dist/cli/main.js, built first if the sources changed. Where TypeScript
 * is not installed and dist/ is missing or older than the sources, engine/cli/main.ts (Node strips
 * its types: the same code, with the stripper's memory), said once on stderr.
 */
export async function shippedEntry() {
  if (await build()) return join(DIST, 'cli', 'main.js');
  console.error('gateway: dist/ is missing or older than engine/ and TypeScript is not installed to build it; running the TypeScript sources (Node strips their types: 15–30 MB more memory). Build with `npm run build` where the dev dependencies are installed.');
  return join(ENGINE, 'cli', 'main.ts');
}

// `node engine/cli/build.mjs` (npm run build, and prepare after npm ci).
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  build().then(
    (built) => {
      if (!built) console.error('gateway build: TypeScript is not installed (npm ci --omit=dev?): dist/ not built; `gateway` will run the TypeScript sources');
    },
    (err) => {
      console.error(err.message);
      process.exitCode = 1;
    },
  );
}

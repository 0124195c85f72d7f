// A set of descriptors to compare or list: read from a folder (a vendors folder, or a repository
// root holding vendors/ and schemas/) or from a git ref (`git ls-tree` + `git cat-file`, never
// touching the work tree). Descriptors are parsed with positions but not validated: `diff`
// must be able to read an old revision written against an older meta-schema.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseYaml, type YamlSource } from '../config/yaml-source.ts';
import type { VendorDescriptor } from '../descriptors/types.ts';
import { SCHEMAS_DIR } from '../validation/ajv.ts';
import { isObject, registryEntry, registryFromDir, type SchemaRegistry } from '../validation/json-schema.ts';

export interface SourceVendor {
  /** Path shown in reports. */
  readonly file: string;
  readonly source: YamlSource;
  readonly descriptor: VendorDescriptor;
  readonly fixtures: ReadonlyMap<string, ReadonlyMap<string, unknown>>;
}

export interface DescriptorSet {
  /** How the set is named in reports: a folder, `main`, `working tree`. */
  readonly label: string;
  readonly vendors: ReadonlyMap<string, SourceVendor>;
  readonly registry: SchemaRegistry;
  /** Files that could not be read as descriptors (reported, then skipped). */
  readonly problems: readonly string[];
}

export class SourceError extends Error {}

/** A folder, or else a git ref (`main`, `HEAD~1`, `v1.2.0`); `vendorsPath` is used inside a ref. */
export function openSet(spec: string, opts: { vendorsPath?: string; cwd?: string } = {}): DescriptorSet {
  const cwd = opts.cwd ?? process.cwd();
  const abs = resolve(cwd, spec);
  if (existsSync(abs) && statSync(abs).isDirectory()) return folderSet(abs, relative(cwd, abs) || '.');
  return gitSet(spec, opts.vendorsPath ?? 'vendors', cwd);
}

export function folderSet(dir: string, label: string = dir): DescriptorSet {
  let vendorsDir = dir;
  let schemasDir = SCHEMAS_DIR;
  if (!readdirSync(dir).some((f) => /\.ya?ml$/.test(f) && !f.startsWith('config')) && existsSync(join(dir, 'vendors'))) {
    vendorsDir = join(dir, 'vendors');
    if (existsSync(join(dir, 'schemas'))) schemasDir = join(dir, 'schemas');
  }
  const files = new Map<string, string>();
  for (const f of readdirSync(vendorsDir)) {
    const p = join(vendorsDir, f);
    if (/\.ya?ml$/.test(f)) files.set(f, readFileSync(p, 'utf8'));
    else if (statSync(p).isDirectory() && existsSync(join(p, 'fixtures'))) {
      for (const route of readdirSync(join(p, 'fixtures'))) {
        const rd = join(p, 'fixtures', route);
        if (!statSync(rd).isDirectory()) continue;
        for (const fx of readdirSync(rd).filter((n) => n.endsWith('.json'))) files.set(`${f}/fixtures/${route}/${fx}`, readFileSync(join(rd, fx), 'utf8'));
      }
    }
  }
  const shown = relative(process.cwd(), vendorsDir) || '.';
  return buildSet(label, files, registryFromDir(schemasDir), (name) => join(shown, name));
}

function git(args: string[], cwd: string, input?: string): Buffer {
  return execFileSync('git', args, { cwd, input, maxBuffer: 256 * 1024 * 1024, stdio: ['pipe', 'pipe', 'pipe'] });
}

export function gitSet(ref: string, vendorsPath: string, cwd: string): DescriptorSet {
  let root: string;
  let commit: string;
  try {
    root = git(['rev-parse', '--show-toplevel'], cwd).toString().trim();
    commit = git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], cwd).toString().trim();
  } catch {
    throw new SourceError(`"${ref}" is neither a folder nor a git ref of the repository here`);
  }
  const readTree = (dir: string): Map<string, string> => {
    const listing = git(['ls-tree', '-r', '-z', commit, '--', dir], root).toString();
    const entries = listing.split('\0').filter(Boolean).map((line) => {
      const [meta, path] = line.split('\t') as [string, string];
      return { sha: meta.split(' ')[2]!, path };
    });
    const out = new Map<string, string>();
    if (!entries.length) return out;
    // One `git cat-file --batch` for every blob: `<sha> blob <size>\n<bytes>\n` each.
    const buf = git(['cat-file', '--batch'], root, entries.map((e) => e.sha).join('\n') + '\n');
    let off = 0;
    for (const e of entries) {
      const nl = buf.indexOf(10, off);
      const size = Number(buf.subarray(off, nl).toString().split(' ')[2]);
      out.set(e.path.slice(dir.length + 1), buf.subarray(nl + 1, nl + 1 + size).toString('utf8'));
      off = nl + 1 + size + 1;
    }
    return out;
  };
  const vendorsRel = relative(root, resolve(cwd, vendorsPath)).replace(/\\/g, '/') || '.';
  const schemasRel = relative(root, SCHEMAS_DIR).replace(/\\/g, '/').replace(/\/$/, '');
  if (vendorsRel.startsWith('..')) throw new SourceError(`the vendors folder ${vendorsPath} is outside the repository ${root}`);
  const files = readTree(vendorsRel);
  const registry = new Map<string, unknown>();
  // The ref's own shared schemas when this engine's schemas/ lives in that repository.
  for (const [name, text] of schemasRel.startsWith('..') ? [] : readTree(schemasRel)) {
    if (!name.includes('/') && name.endsWith('.json')) {
      try {
        registry.set(...registryEntry(name, text));
      } catch {
        /* a broken schema file in an old revision: refs into it will show as unresolved */
      }
    }
  }
  return buildSet(ref, files, registry.size ? registry : registryFromDir(), (name) => `${ref}:${vendorsRel}/${name}`);
}

/** `files`: path relative to the vendors folder → text. */
function buildSet(label: string, files: ReadonlyMap<string, string>, registry: SchemaRegistry, display: (name: string) => string): DescriptorSet {
  const vendors = new Map<string, SourceVendor>();
  const problems: string[] = [];
  for (const [name, text] of files) {
    if (name.includes('/') || !/\.ya?ml$/.test(name)) continue;
    let source: YamlSource;
    try {
      source = parseYaml(text, display(name));
    } catch (err) {
      problems.push(`${display(name)}: ${(err as Error).message.split('\n')[0]}`);
      continue;
    }
    const d = source.value;
    if (!isObject(d) || typeof d.vendor !== 'string' || !Array.isArray(d.routes)) {
      problems.push(`${display(name)}: not a vendor descriptor (needs vendor and routes)`);
      continue;
    }
    const vendor = d.vendor;
    const fixtures = new Map<string, Map<string, unknown>>();
    const prefix = `${name.replace(/\.ya?ml$/, '')}/fixtures/`;
    for (const [fname, ftext] of files) {
      if (!fname.startsWith(prefix)) continue;
      const [route, file] = fname.slice(prefix.length).split('/') as [string, string | undefined];
      if (!file?.endsWith('.json')) continue;
      try {
        const byName = fixtures.get(route) ?? new Map<string, unknown>();
        byName.set(file.slice(0, -5), JSON.parse(ftext));
        fixtures.set(route, byName);
      } catch {
        problems.push(`${display(fname)}: fixture is not JSON`);
      }
    }
    vendors.set(vendor, { file: display(name), source, descriptor: d as unknown as VendorDescriptor, fixtures });
  }
  return { label, vendors, registry, problems };
}

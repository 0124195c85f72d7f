// Temp vendor folders for the tooling tests: a known-good descriptor (the async scaffold) that each
// test breaks in exactly one way, by editing the parsed YAML or a fixture.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { scaffoldVendor, type ScaffoldStyle } from '../../engine/tooling/scaffold.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const made: string[] = [];

export function tempDir(prefix = 'gw-tooling-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export function cleanTempDirs(): void {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** A vendors folder holding scaffolded vendors (default: one async vendor `acme`). */
export function vendorsDir(vendors: { name: string; style?: ScaffoldStyle }[] = [{ name: 'acme' }]): string {
  const dir = tempDir();
  for (const v of vendors) scaffoldVendor({ name: v.name, style: v.style ?? 'async', dir });
  return dir;
}

/** Parse a descriptor, let `edit` change it, write it back (YAML); returns the new text. */
export function editDescriptor(dir: string, vendor: string, edit: (d: any) => void): string {
  const file = join(dir, `${vendor}.yaml`);
  const d = parse(readFileSync(file, 'utf8'));
  edit(d);
  const text = stringify(d, { lineWidth: 0 });
  writeFileSync(file, text);
  return text;
}

export function writeFixture(dir: string, vendor: string, route: string, name: string, value: unknown): void {
  writeFileSync(join(dir, vendor, 'fixtures', route, `${name}.json`), JSON.stringify(value, null, 2));
}

/** 1-based line of the first line of `text` containing `needle`. */
export function lineOf(text: string, needle: string): number {
  const i = text.split('\n').findIndex((l) => l.includes(needle));
  if (i < 0) throw new Error(`"${needle}" not in text`);
  return i + 1;
}

export interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Run the `gateway` CLI as a user would, on the Node running the tests. */
export function cli(args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): CliResult {
  const r = spawnSync(process.execPath, [join(ROOT, 'engine/cli/main.ts'), ...args], {
    cwd: opts.cwd ?? ROOT,
    env: { ...process.env, ...opts.env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

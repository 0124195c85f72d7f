// Loads vendors/*.yaml: each file is validated against the descriptor meta-schema with every
// problem positioned (`file:line:col  /pointer  message`), and its fixtures are read from
// vendors/<vendor>/fixtures/<route id>/<state>.json. All problems of all files are reported
// together, so one run shows a reviewer everything that is wrong.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { LoadError, readYaml, type Problem, type YamlSource } from '../config/yaml-source.ts';
import { ajvProblems, SCHEMA_BASE } from '../validation/ajv.ts';
import type { VendorDescriptor } from './types.ts';

export interface LoadedVendor {
  readonly file: string;
  readonly source: YamlSource;
  readonly descriptor: VendorDescriptor;
  /** route id → fixture name (created, queued, running, succeeded, failed, ...) → JSON */
  readonly fixtures: ReadonlyMap<string, ReadonlyMap<string, unknown>>;
}

export const SUPPORTED_FORMATS = [1];

/** The descriptors of a folder by vendor name (`<name>.yaml` or `.yml`; the name is the vendor's). */
export function descriptorNames(dir: string): string[] {
  return readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort().map((f) => f.replace(/\.ya?ml$/, ''));
}

/**
 * The enabled descriptors of `dir` (config `vendors.enabled`). The others are not read at all:
 * the catalogue of real providers ships disabled beside the stand-ins, and a descriptor an
 * operator has not enabled must neither stop start-up nor be served.
 */
export function loadVendorDir(dir: string, ajv: Ajv2020, enabled: readonly string[]): LoadedVendor[] {
  if (!existsSync(dir)) throw new LoadError([{ file: dir, line: 0, col: 0, pointer: '', message: 'vendors directory does not exist' }]);
  const files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f) && enabled.includes(f.replace(/\.ya?ml$/, ''))).sort().map((f) => join(dir, f));
  const problems: Problem[] = [];
  const vendors: LoadedVendor[] = [];
  for (const file of files) {
    try {
      vendors.push(loadVendorFile(file, ajv));
    } catch (err) {
      if (err instanceof LoadError) problems.push(...err.problems);
      else throw err;
    }
  }
  if (problems.length) throw new LoadError(problems);
  return vendors;
}

export function loadVendorFile(file: string, ajv: Ajv2020): LoadedVendor {
  const source = readYaml(file);
  const value = source.value as Record<string, unknown> | null;
  if (value && typeof value === 'object' && 'format' in value && !SUPPORTED_FORMATS.includes(value.format as number)) {
    throw new LoadError([source.problem('/format', `descriptor format ${JSON.stringify(value.format)} is not supported by this engine (supported: ${SUPPORTED_FORMATS.join(', ')})`)]);
  }
  const validate = ajv.getSchema(`${SCHEMA_BASE}/schemas/vendor.schema.json`)!;
  if (!validate(value)) throw new LoadError(ajvProblems(source, validate.errors));
  const descriptor = value as unknown as VendorDescriptor;
  const expected = basename(file).replace(/\.ya?ml$/, '');
  if (descriptor.vendor !== expected) {
    throw new LoadError([source.problem('/vendor', `vendor "${descriptor.vendor}" must match the file name "${expected}"`)]);
  }
  return { file, source, descriptor, fixtures: readFixtures(join(file, "..", descriptor.vendor, "fixtures")) };
}

function readFixtures(dir: string): Map<string, Map<string, unknown>> {
  const out = new Map<string, Map<string, unknown>>();
  if (!existsSync(dir)) return out;
  for (const routeId of readdirSync(dir)) {
    const byName = new Map<string, unknown>();
    for (const f of readdirSync(join(dir, routeId)).filter((n) => n.endsWith('.json'))) {
      const path = join(dir, routeId, f);
      try {
        byName.set(f.slice(0, -5), JSON.parse(readFileSync(path, 'utf8')));
      } catch (err) {
        throw new LoadError([{ file: relative(process.cwd(), path), line: 1, col: 1, pointer: '', message: `fixture is not JSON: ${(err as Error).message}` }]);
      }
    }
    out.set(routeId, byName);
  }
  return out;
}

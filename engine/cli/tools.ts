// The onboarding and review commands: `routes`, `diff`, `openapi`, `new-vendor` (and `check`,
// in check.ts). None of them starts a server.
import { existsSync, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfigFile } from '../load-config.ts';
import { formatProblem, LoadError } from '../config/yaml-source.ts';
import type { GatewayConfig } from '../config/types.ts';
import type { VendorDescriptor } from '../descriptors/types.ts';
import { runChecks } from '../tooling/checks.ts';
import { CHANGE_CLASSES, diffSets, gate, type ChangeClass } from '../tooling/diff.ts';
import { renderMarkdown, renderText } from '../tooling/diff-report.ts';
import { formatFinding } from '../tooling/findings.ts';
import { buildOpenApi } from '../docs/openapi.ts';
import { renderRouteTable, routeTable } from '../tooling/routes.ts';
import { SCAFFOLD_STYLES, ScaffoldError, scaffoldVendor, type ScaffoldStyle } from '../tooling/scaffold.ts';
import { folderSet, openSet, SourceError, type DescriptorSet } from '../tooling/sources.ts';
import { enableVendor } from '../tooling/enable-vendor.ts';

/** The config file named by --config, else GATEWAY_CONFIG, else ./config.yaml. */
const configFileOf = (path: string | undefined) => resolve(path ?? process.env.GATEWAY_CONFIG ?? 'config.yaml');

/** The config, when there is one (--config, GATEWAY_CONFIG, ./config.yaml); problems are printed. */
function config(path: string | undefined): GatewayConfig | undefined {
  const explicit = path ?? process.env.GATEWAY_CONFIG;
  const file = configFileOf(path);
  if (!existsSync(file)) {
    if (explicit !== undefined) console.error(`${explicit}: no such config file`);
    return undefined;
  }
  try {
    return loadConfigFile(file);
  } catch (err) {
    if (!(err instanceof LoadError)) throw err;
    for (const p of err.problems) console.error(formatProblem(p));
    return undefined;
  }
}

/** Write to stdout and wait until it is flushed: the CLI exits right after, and pipes are asynchronous. */
export function print(text: string): Promise<void> {
  return new Promise((done, fail) => process.stdout.write(text, (err) => (err ? fail(err) : done())));
}

const creditsPerUsdOf = (c: GatewayConfig | undefined) => Number((c?.billing as { credits_per_usd?: number } | undefined)?.credits_per_usd ?? 100);

/** The working tree's descriptors: the config's vendors folder, every descriptor (a diff reviews files). */
function workingSet(c: GatewayConfig | undefined): DescriptorSet {
  return folderSet(c?.vendors.dir ?? resolve('vendors'), 'working tree');
}

/** What a gateway on this config serves: with a config, its `vendors.enabled` only. */
function servedSet(set: DescriptorSet, c: GatewayConfig | undefined): DescriptorSet {
  if (!c) return set;
  return { ...set, vendors: new Map([...set.vendors].filter(([v]) => c.vendors.enabled.includes(v))) };
}

function descriptorsOf(set: DescriptorSet): VendorDescriptor[] {
  return [...set.vendors.values()].map((v) => v.descriptor).sort((a, b) => a.vendor.localeCompare(b.vendor));
}

export async function routesCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { config: { type: 'string' }, format: { type: 'string', default: 'text' } } });
  const c = config(values.config);
  // The config's folder (now, or at a git ref) lists what it enables; another folder lists all it holds.
  const source = positionals[0];
  const otherFolder = source !== undefined && existsSync(source) && resolve(source) !== c?.vendors.dir;
  const all = source ? openSet(source, { vendorsPath: c?.vendors.dir }) : workingSet(c);
  const set = otherFolder ? all : servedSet(all, c);
  for (const p of set.problems) console.error(p);
  const rows = await routeTable(descriptorsOf(set), creditsPerUsdOf(c));
  await print(values.format === 'json' ? `${JSON.stringify(rows, null, 2)}\n` : renderRouteTable(rows, values.format === 'markdown' ? 'markdown' : 'text'));
  return set.problems.length ? 1 : 0;
}

export async function diffCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { config: { type: 'string' }, format: { type: 'string', default: 'markdown' }, 'fail-on': { type: 'string', default: 'breaking' }, out: { type: 'string' } },
  });
  if (positionals.length < 1 || positionals.length > 2) {
    console.error('usage: gateway diff <old> [new]   (folders, or a git ref; new defaults to the working tree)');
    return 2;
  }
  const failOn = values['fail-on'] === 'none' ? [] : values['fail-on']!.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = failOn.filter((c) => !(CHANGE_CLASSES as readonly string[]).includes(c));
  if (unknown.length) {
    console.error(`--fail-on: unknown class ${unknown.join(', ')} (classes: ${CHANGE_CLASSES.join(', ')}, or none)`);
    return 2;
  }
  const c = config(values.config);
  let before: DescriptorSet;
  let after: DescriptorSet;
  try {
    before = openSet(positionals[0]!, { vendorsPath: c?.vendors.dir });
    after = positionals[1] ? openSet(positionals[1], { vendorsPath: c?.vendors.dir }) : workingSet(c);
  } catch (err) {
    if (!(err instanceof SourceError)) throw err;
    console.error(err.message);
    return 2;
  }
  const report = await diffSets(before, after, { creditsPerUsd: creditsPerUsdOf(c) });
  const text = values.format === 'json' ? `${JSON.stringify(report, null, 2)}\n` : values.format === 'text' ? renderText(report) : renderMarkdown(report);
  if (values.out) writeFileSync(values.out, text);
  else await print(text);
  return gate(report, failOn as ChangeClass[]);
}

export async function openapiCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { config: { type: 'string' }, out: { type: 'string' }, 'server-url': { type: 'string' } } });
  const c = config(values.config);
  const doc = buildOpenApi(descriptorsOf(servedSet(workingSet(c), c)), { serverUrl: values['server-url'] });
  const text = `${JSON.stringify(doc, null, 2)}\n`;
  if (values.out) {
    writeFileSync(values.out, text);
    console.error(`wrote ${values.out} (${Object.keys(doc.paths as object).length} paths)`);
  } else await print(text);
  return 0;
}

export async function newVendorCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { config: { type: 'string' }, style: { type: 'string', default: 'async' }, dir: { type: 'string' }, force: { type: 'boolean', default: false } },
  });
  const name = positionals[0];
  if (!name) {
    console.error(`usage: gateway new-vendor <name> --style ${SCAFFOLD_STYLES.join('|')} [--dir DIR] [--force]`);
    return 2;
  }
  const c = config(values.config);
  const dir = resolve(values.dir ?? c?.vendors.dir ?? 'vendors');
  let result;
  try {
    result = scaffoldVendor({ name, style: values.style as ScaffoldStyle, dir, force: values.force });
  } catch (err) {
    if (!(err instanceof ScaffoldError)) throw err;
    console.error(err.message);
    return 2;
  }
  for (const f of result.files) console.log(`created ${relative(process.cwd(), f)}`);
  // Scaffolded into the config's own folder: served once listed in vendors.enabled.
  if (c && dir === c.vendors.dir) {
    const file = configFileOf(values.config);
    const outcome = enableVendor(file, name);
    if (outcome === 'enabled') console.log(`enabled ${name} in ${relative(process.cwd(), file)} (vendors.enabled)`);
    if (outcome === 'no-list') console.log(`to serve it, list ${name} in vendors.enabled in ${relative(process.cwd(), file)}`);
  }
  const report = await runChecks({ config: values.config, paths: [result.descriptor] });
  for (const f of report.findings) console.log(formatFinding(f));
  console.log(report.ok ? `check: ok (${report.routes} route(s), ${report.warnings} warning(s))` : `check: ${report.errors} error(s)`);
  console.log(`\nroutes: ${result.routes.join(', ')}\nnext: edit ${relative(process.cwd(), result.descriptor)}, run \`npx gateway check\`, start the sandbox with \`npm start\``);
  return report.ok ? 0 : 1;
}

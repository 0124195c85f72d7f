// `gateway check`: everything that can be known about a config and its descriptors without
// starting a server. First each file against the meta-schema (positioned), then the semantic
// checks a reviewer would otherwise do by hand:
//   route-collision  two routes (any vendors, aliases included) answering the same method + path
//   ref              a `$ref` that resolves to nothing
//   expression       an expression that does not compile, reads a field the request schema does
//                    not declare, or fails on the route's examples
//   status-map       a poll status_map that leaves a task state unreachable
//   example          a request example the route's own validation refuses
//   pricing          a pricing block that does not compile or cannot price an example
//   fixture          fixtures the mappings cannot read (no task id, unmapped status, empty result)
//   engine           whatever else the engine's own compiler refuses
// Route collisions are ./route-collisions.ts's; each vendor's and route's checks ./check-route.ts's.
import { basename, dirname, relative, resolve } from 'node:path';
import { LoadError, type Problem } from '../config/yaml-source.ts';
import type { GatewayConfig } from '../config/types.ts';
import { compileVendors } from '../descriptors/compile.ts';
import { loadVendorFile, type LoadedVendor } from '../descriptors/load-descriptors.ts';
import { createUpstreamAgent } from '../upstream/client.ts';
import { systemClock } from '../util/clock.ts';
import { createAjv } from '../validation/ajv.ts';
import { registryFromDir } from '../validation/json-schema.ts';
import { adminTokenFindings } from './admin-token.ts';
import { checkVendor } from './check-route.ts';
import { checkTargets, fallbackConfig, type TargetOptions } from './check-sources.ts';
import { finding, sortFindings, type Finding } from './findings.ts';
import { routeCollisions } from './route-collisions.ts';

export { RESERVED_PATHS, routeSignatures, servedAliases } from './route-collisions.ts';

export interface CheckReport {
  ok: boolean;
  errors: number;
  warnings: number;
  /** Descriptor files read (whether or not they passed the meta-schema). */
  vendors: number;
  /** Of those, served under the config (`vendors.enabled`; every one without a config), and not. */
  enabled: number;
  disabled: number;
  /** Routes of the descriptors that loaded. */
  routes: number;
  files: string[];
  findings: Finding[];
}

export async function runChecks(opts: TargetOptions = {}): Promise<CheckReport> {
  const targets = checkTargets(opts);
  const findings: Finding[] = [];
  findings.push(...targets.configProblems.map((p) => finding(p, 'config')));
  findings.push(...targets.configWarnings.map((p) => finding(p, 'config', 'warning')));
  findings.push(...targets.problems.map((p) => finding(p, 'config')));
  if (targets.config && targets.configFile) findings.push(...adminTokenFindings(targets.config, relative(process.cwd(), targets.configFile) || targets.configFile));

  const ajv = createAjv({ useDefaults: true });
  const loaded: LoadedVendor[] = [];
  for (const file of targets.files) {
    try {
      loaded.push(loadVendorFile(file, ajv));
    } catch (err) {
      if (!(err instanceof LoadError)) throw err;
      for (const p of err.problems) findings.push(finding(p, p.file.endsWith('.json') ? 'fixture' : 'meta-schema'));
    }
  }
  const served = (v: LoadedVendor) => isEnabled(v.file, targets.config);
  const enabledFiles = targets.files.filter((f) => isEnabled(f, targets.config)).length;
  const enabled = loaded.filter(served);
  const creditsPerUsd = Number((targets.config?.billing as { credits_per_usd?: number } | undefined)?.credits_per_usd ?? 100);
  const registry = registryFromDir();

  // Collisions among all descriptors read: an operator may enable any of them together.
  findings.push(...routeCollisions(loaded));
  for (const v of loaded) findings.push(...(await checkVendor(v, { ajv, registry, creditsPerUsd })));
  findings.push(...engineCompile(enabled, targets.config, findings));
  // A disabled descriptor (the catalogue) is compiled as the sandbox would serve it, so it is
  // known good before an operator enables it, without upstreams of its own in this config.
  findings.push(...engineCompile(loaded.filter((v) => !served(v)), undefined, findings));

  sortFindings(findings);
  const errors = findings.filter((f) => f.severity === 'error').length;
  return {
    ok: errors === 0,
    errors,
    warnings: findings.length - errors,
    vendors: targets.files.length,
    enabled: enabledFiles,
    disabled: targets.files.length - enabledFiles,
    routes: loaded.reduce((n, v) => n + v.descriptor.routes.length, 0),
    files: targets.files.map((f) => relative(process.cwd(), f) || f),
    findings,
  };
}

/**
 * Served under this config: listed in `vendors.enabled` when the descriptor is in the config's
 * vendors folder; a descriptor checked from elsewhere (a path on the command line) counts as enabled.
 */
function isEnabled(file: string, config: GatewayConfig | undefined): boolean {
  if (!config || resolve(dirname(file)) !== resolve(config.vendors.dir)) return true;
  // A descriptor's vendor is its file name (the loader refuses another).
  return config.vendors.enabled.includes(basename(file).replace(/\.ya?ml$/, ''));
}

// ---------------------------------------------------------------------------------------------

/** The engine's own compiler, as `serve` runs it; problems the checks above already named are dropped. */
function engineCompile(vendors: readonly LoadedVendor[], config: GatewayConfig | undefined, already: readonly Finding[]): Finding[] {
  if (vendors.length === 0) return [];
  const cfg = structuredClone(config ?? fallbackConfig(dirname(vendors[0]!.file)));
  const sandbox = cfg.sandbox.enabled;
  const dispatcher = createUpstreamAgent();
  let problems: Problem[] = [];
  try {
    compileVendors(vendors, {
      ajv: createAjv({ useDefaults: true }),
      config: cfg,
      clock: systemClock,
      dispatcher,
      baseUrlFor: (v, m) => (sandbox ? `http://sandbox.invalid/${v}` : (m?.base_url ?? cfg.upstreams[v]?.base_url)),
    });
  } catch (err) {
    if (err instanceof LoadError) problems = err.problems;
    else problems = [{ file: vendors[0]!.source.file, line: 1, col: 1, pointer: '', message: `the engine failed to compile the descriptors: ${(err as Error).message}` }];
  } finally {
    void dispatcher.close();
  }
  const covered = (p: Problem) =>
    already.some((f) => f.severity === 'error' && f.file === p.file && (f.pointer === p.pointer || f.pointer.startsWith(`${p.pointer}/`)));
  return problems.filter((p) => !covered(p)).map((p) => finding(p, 'engine'));
}

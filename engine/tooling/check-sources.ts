// What `gateway check [paths]` looks at: the config (when there is one) and the descriptor
// files named by the paths (files, folders of descriptors, repository roots with vendors/, or
// fixture files, which stand for their descriptor) — by default the config's vendors folder.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { loadConfigFile, loadConfigText } from '../load-config.ts';
import { LoadError, type Problem } from '../config/yaml-source.ts';
import type { GatewayConfig } from '../config/types.ts';
import { resultsConfigWarnings } from '../results/config.ts';
import { descriptorNames } from '../descriptors/load-descriptors.ts';

export interface CheckTargets {
  config?: GatewayConfig;
  /** The config file read (when one was). */
  configFile?: string;
  configProblems: Problem[];
  /** What the config allows but an operator should know (e.g. a local result store in Redis mode). */
  configWarnings: Problem[];
  /** Absolute descriptor file paths, sorted, without duplicates. */
  files: string[];
  problems: Problem[];
}

export interface TargetOptions {
  /** --config; else GATEWAY_CONFIG; else ./config.yaml when it exists. */
  config?: string;
  paths?: readonly string[];
  env?: Record<string, string | undefined>;
}

export function checkTargets(opts: TargetOptions): CheckTargets {
  const env = opts.env ?? process.env;
  const configProblems: Problem[] = [];
  const problems: Problem[] = [];
  const configWarnings: Problem[] = [];
  let config: GatewayConfig | undefined;
  const explicit = opts.config ?? env.GATEWAY_CONFIG;
  const configFile = resolve(explicit ?? 'config.yaml');
  if (existsSync(configFile)) {
    try {
      config = loadConfigFile(configFile, { env });
      configWarnings.push(...resultsConfigWarnings(config.results, config.store.kind, config.store.ledger_retention_hours).map((w) => ({ file: configFile, line: 1, col: 1, ...w })));
    } catch (err) {
      if (!(err instanceof LoadError)) throw err;
      configProblems.push(...err.problems);
    }
  } else if (explicit !== undefined) {
    configProblems.push({ file: explicit, line: 0, col: 0, pointer: '', message: 'config file does not exist' });
  }

  const files = new Set<string>();
  const paths = opts.paths?.length ? opts.paths : [config?.vendors.dir ?? 'vendors'];
  for (const p of paths) {
    const abs = resolve(p);
    if (!existsSync(abs)) {
      // A config that did not load already says why; its vendors folder is unknown, not missing.
      if (!(configProblems.length && !opts.paths?.length)) problems.push({ file: p, line: 0, col: 0, pointer: '', message: 'no such file or folder' });
      continue;
    }
    if (statSync(abs).isDirectory()) {
      const dir = !hasYaml(abs) && existsSync(join(abs, 'vendors')) ? join(abs, 'vendors') : abs;
      for (const f of readdirSync(dir).filter((n) => /\.ya?ml$/.test(n)).sort()) files.add(join(dir, f));
    } else if (/\.ya?ml$/.test(abs)) files.add(abs);
    else if (abs.endsWith('.json')) {
      // vendors/<vendor>/fixtures/<route>/<state>.json → vendors/<vendor>.yaml
      const vendorDir = dirname(dirname(dirname(abs)));
      const descriptor = ['.yaml', '.yml'].map((e) => join(dirname(vendorDir), `${basename(vendorDir)}${e}`)).find(existsSync);
      if (descriptor) files.add(descriptor);
      else problems.push({ file: p, line: 0, col: 0, pointer: '', message: 'not a fixture of a descriptor (expected <vendors>/<vendor>/fixtures/<route>/<state>.json)' });
    } else problems.push({ file: p, line: 0, col: 0, pointer: '', message: 'not a descriptor (.yaml), a fixture (.json) or a folder' });
  }
  return { config, configFile: config ? configFile : undefined, configProblems, configWarnings, files: [...files].sort(), problems };
}

function hasYaml(dir: string): boolean {
  return readdirSync(dir).some((n) => /\.ya?ml$/.test(n) && !/^config(\.|$)/.test(n));
}

/** The config used to compile descriptors when none was given: sandbox on, every descriptor of the folder enabled. */
export function fallbackConfig(vendorsDir: string): GatewayConfig {
  const enabled = JSON.stringify(descriptorNames(vendorsDir));
  return loadConfigText(`sandbox: { enabled: true, demo_api_key: gw_test_check_only_000000000000 }\nvendors: { dir: ${JSON.stringify(vendorsDir)}, enabled: ${enabled} }\n`, process.cwd(), { env: {} });
}

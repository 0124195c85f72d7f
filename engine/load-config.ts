// Loads config.yaml: `${VAR}` / `${VAR:-default}` from the environment, validated against
// schemas/config.schema.json (defaults filled in, env strings coerced to the schema's types),
// then checked for what the schema cannot say (CIDRs, files, amounts, limits: see
// semanticProblems). Every problem is positioned. `serve` and `gateway check` both load through
// here, so they refuse the same configs with the same report.
// The documented environment overrides (PORT, METRICS_PORT, ...: engine/config/env-overrides.ts)
// apply to any config file, after it is read.
import { statSync } from 'node:fs';
import { resolve, dirname, isAbsolute } from 'node:path';
import { resolveBillingConfig, type BillingConfigInput } from './billing/config.ts';
import { creditsToMilli, MoneyError } from './util/money.ts';
import { ConfigValueError, type ConfigProblem } from './errors/config-error.ts';
import { LimitsConfig, type LimitsConfigInput } from './limits/config.ts';
import { createAjv, ajvProblems } from './validation/ajv.ts';
import { descriptorNames } from './descriptors/load-descriptors.ts';
import { resolveWebhookConfig } from './webhooks/config.ts';
import { resultsConfigProblems } from './results/config.ts';
import { LoadError, readYaml, parseYaml, type YamlSource } from './config/yaml-source.ts';
import type { GatewayConfig } from './config/types.ts';
import { applyEnvOverrides, blameEnv } from './config/env-overrides.ts';

export interface LoadConfigOptions {
  env?: Record<string, string | undefined>;
}

export function loadConfigFile(file: string, opts: LoadConfigOptions = {}): GatewayConfig {
  const env = opts.env ?? process.env;
  // Paths in the config are relative to the config file.
  return validateConfig(readYaml(file, { env }), env, dirname(resolve(file)));
}

/** Build a config from YAML text (tests, embedded use); relative paths resolve from `baseDir`. */
export function loadConfigText(text: string, baseDir: string, opts: LoadConfigOptions = {}): GatewayConfig {
  const env = opts.env ?? process.env;
  return validateConfig(parseYaml(text, '<config>', { env }), env, baseDir);
}

let validator: ReturnType<ReturnType<typeof createAjv>['getSchema']> | undefined;

function validateConfig(source: YamlSource, env: Record<string, string | undefined>, baseDir: string): GatewayConfig {
  validator ??= createAjv({ useDefaults: true, coerceTypes: true }).getSchema('https://model-gateway.dev/schemas/config.schema.json');
  const value = (source.value ?? {}) as Record<string, unknown>;
  // Sections may be left out entirely; give them their defaults.
  for (const section of ['server', 'store', 'sandbox', 'admin', 'console', 'timing', 'billing', 'limits', 'webhooks', 'results', 'log', 'tracing', 'metrics', 'vendors', 'upstreams']) {
    value[section] ??= {};
  }
  const overridden = applyEnvOverrides(value, env);
  if (!validator!(value)) throw new LoadError(ajvProblems(source, validator!.errors).map((p) => blameEnv(p, overridden)));
  const config = value as unknown as GatewayConfig;
  if (config.sandbox.enabled && !config.sandbox.demo_api_key) {
    throw new LoadError([source.problem('/sandbox', 'the sandbox needs demo_api_key (set GATEWAY_DEMO_API_KEY)')]);
  }
  if (!isAbsolute(config.vendors.dir)) config.vendors.dir = resolve(baseDir, config.vendors.dir);
  if (!isAbsolute(config.results.local.dir)) config.results.local.dir = resolve(baseDir, config.results.local.dir);
  const problems = semanticProblems(config);
  // In file order, as schema errors and `gateway check` list them.
  if (problems.length) throw new LoadError(problems.map((p) => blameEnv(source.problem(p.pointer, p.message), overridden)).sort((a, b) => a.line - b.line || a.col - b.col));
  return config;
}

/**
 * What the schema lets through but `serve` would refuse as it starts: each section's own
 * resolver runs here (the same code the gateway runs), plus the files and amounts the gateway
 * reads at start-up. A new start-up check on the config belongs in a resolver or here, never
 * only in startGateway, or `check` would pass a config that `serve` refuses.
 */
function semanticProblems(config: GatewayConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const section = (resolveSection: () => unknown) => {
    try {
      resolveSection();
    } catch (err) {
      if (!(err instanceof ConfigValueError)) throw err;
      problems.push(...err.problems);
    }
  };
  section(() => resolveBillingConfig(config.billing as BillingConfigInput));
  section(() => new LimitsConfig(config.limits as LimitsConfigInput));
  section(() => resolveWebhookConfig(config.webhooks));
  problems.push(...resultsConfigProblems(config.results));
  if (config.sandbox.enabled) {
    try {
      creditsToMilli(config.sandbox.demo_credits, 'the amount'); // topped up at start-up
    } catch (err) {
      if (!(err instanceof MoneyError)) throw err;
      problems.push({ pointer: '/sandbox/demo_credits', message: err.message });
    }
  }
  problems.push(...clusterNodeProblems(config.store.redis_cluster_nodes ?? []));
  problems.push(...poolProblems(config));
  if (config.tracing.enabled) problems.push(...endpointProblems(config.tracing.otlp_endpoint, '/tracing/otlp_endpoint'));
  if (!statSync(config.vendors.dir, { throwIfNoEntry: false })?.isDirectory()) {
    problems.push({ pointer: '/vendors/dir', message: `no such folder: ${config.vendors.dir}` });
  } else problems.push(...enabledVendorProblems(config.vendors));
  return problems;
}

/** Each enabled name is a descriptor of the folder: a typo would otherwise serve nothing, silently. */
function enabledVendorProblems(vendors: GatewayConfig['vendors']): ConfigProblem[] {
  const present = new Set(descriptorNames(vendors.dir));
  return vendors.enabled.flatMap((name, i) =>
    present.has(name) ? [] : [{ pointer: `/vendors/enabled/${i}`, message: `no descriptor ${name}.yaml in ${vendors.dir} (there: ${[...present].join(', ') || 'none'})` }],
  );
}

/** A pool's member ids name the tasks' members and metrics labels: unique; and one form per vendor. */
function poolProblems(config: GatewayConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const [vendor, up] of Object.entries(config.upstreams)) {
    if (!up.members) continue;
    if (up.base_url !== undefined) problems.push({ pointer: `/upstreams/${vendor}/base_url`, message: 'with members, each member has its own base_url' });
    if (up.credentials !== undefined) problems.push({ pointer: `/upstreams/${vendor}/credentials`, message: 'with members, each member has its own credentials' });
    const seen = new Set<string>();
    up.members.forEach((m, i) => {
      if (seen.has(m.id)) problems.push({ pointer: `/upstreams/${vendor}/members/${i}/id`, message: `member id ${JSON.stringify(m.id)} is used twice` });
      seen.add(m.id);
      if (!(m.weight > 0)) problems.push({ pointer: `/upstreams/${vendor}/members/${i}/weight`, message: 'a weight is above 0' });
    });
  }
  return problems;
}

/** The exporter would only fail at its first batch, long after start-up: refuse it now. */
function endpointProblems(url: string, pointer: string): ConfigProblem[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [{ pointer, message: `not a URL: ${url}` }];
  }
  return u.protocol === 'http:' || u.protocol === 'https:' ? [] : [{ pointer, message: `an OTLP/HTTP endpoint is http: or https:, not ${u.protocol}` }];
}

/**
 * Cluster nodes the client can start from: a host and port each, and one scheme and one set of
 * credentials for all (the client reaches every node it discovers with the same ones).
 */
function clusterNodeProblems(nodes: readonly string[]): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  let first: URL | undefined;
  nodes.forEach((node, i) => {
    const pointer = `/store/redis_cluster_nodes/${i}`;
    let u: URL;
    try {
      u = new URL(node);
    } catch {
      problems.push({ pointer, message: `not a URL: ${node}` });
      return;
    }
    if (!u.hostname) problems.push({ pointer, message: 'a cluster node needs a host' });
    else if (first && (u.protocol !== first.protocol || u.username !== first.username || u.password !== first.password)) {
      problems.push({ pointer, message: 'every cluster node needs the same scheme and credentials as the first' });
    }
    first ??= u;
  });
  return problems;
}

// Loads config.yaml: `${VAR}` / `${VAR:-default}` from the environment, validated against
// schemas/config.schema.json (defaults filled in, env strings coerced to the schema's types).
// PORT, when set, overrides the listen port, as Node services conventionally allow.
import { resolve, dirname, isAbsolute } from 'node:path';
import { createAjv, ajvProblems } from '../validation/ajv.ts';
import { LoadError, readYaml, parseYaml, type YamlSource } from './yaml-source.ts';
import type { GatewayConfig } from './types.ts';

export interface LoadConfigOptions {
  env?: Record<string, string | undefined>;
}

export function loadConfigFile(file: string, opts: LoadConfigOptions = {}): GatewayConfig {
  const env = opts.env ?? process.env;
  const config = validateConfig(readYaml(file, { env }), env);
  // Paths in the config are relative to the config file.
  if (!isAbsolute(config.vendors.dir)) config.vendors.dir = resolve(dirname(resolve(file)), config.vendors.dir);
  return config;
}

/** Build a config from YAML text (tests, embedded use); relative paths resolve from `baseDir`. */
export function loadConfigText(text: string, baseDir: string, opts: LoadConfigOptions = {}): GatewayConfig {
  const env = opts.env ?? process.env;
  const config = validateConfig(parseYaml(text, '<config>', { env }), env);
  if (!isAbsolute(config.vendors.dir)) config.vendors.dir = resolve(baseDir, config.vendors.dir);
  return config;
}

let validator: ReturnType<ReturnType<typeof createAjv>['getSchema']> | undefined;

function validateConfig(source: YamlSource, env: Record<string, string | undefined>): GatewayConfig {
  validator ??= createAjv({ useDefaults: true, coerceTypes: true }).getSchema('https://model-gateway.dev/schemas/config.schema.json');
  const value = (source.value ?? {}) as Record<string, unknown>;
  // Sections may be left out entirely; give them their defaults.
  for (const section of ['server', 'store', 'sandbox', 'admin', 'timing', 'billing', 'limits', 'webhooks', 'log', 'vendors', 'upstreams']) {
    value[section] ??= {};
  }
  if (!validator!(value)) throw new LoadError(ajvProblems(source, validator!.errors));
  const config = value as unknown as GatewayConfig;
  if (env.PORT !== undefined && env.PORT !== '') {
    const port = Number(env.PORT);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new LoadError([{ file: 'env', line: 0, col: 0, pointer: '/server/port', message: `PORT=${env.PORT} is not a port number` }]);
    }
    config.server.port = port;
  }
  if (config.sandbox.enabled && !config.sandbox.demo_api_key) {
    throw new LoadError([source.problem('/sandbox', 'the sandbox needs demo_api_key (set GATEWAY_DEMO_API_KEY)')]);
  }
  return config;
}

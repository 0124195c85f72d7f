// The environment variables that override a config value whatever config file is loaded: the
// one way these variables are read (the shipped files give plain defaults for them, and name one
// with `${VAR}` only to make it required). Before, only files that interpolated them took them:
// METRICS_PORT was silently ignored in an operator's own file and a second process on the host
// failed on port 9464. Applied after the file is read and before the schema check, so a value from the
// environment is coerced and validated as the file's would be, and a bad one is reported as
// coming from the environment. docs/configuration.md lists them.
import type { Problem } from './yaml-source.ts';

export const ENV_OVERRIDES: ReadonlyArray<{ name: string; pointer: string; secret?: boolean }> = [
  { name: 'HOST', pointer: '/server/host' },
  { name: 'PORT', pointer: '/server/port' },
  { name: 'METRICS_HOST', pointer: '/metrics/host' },
  { name: 'METRICS_PORT', pointer: '/metrics/port' },
  { name: 'GATEWAY_STORE', pointer: '/store/kind' },
  { name: 'REDIS_URL', pointer: '/store/redis_url', secret: true },
  { name: 'REDIS_KEY_PREFIX', pointer: '/store/key_prefix' },
  { name: 'TASK_RETENTION_HOURS', pointer: '/store/task_retention_hours' },
  { name: 'GATEWAY_ADMIN_TOKEN', pointer: '/admin/token', secret: true },
  { name: 'GATEWAY_DEMO_API_KEY', pointer: '/sandbox/demo_api_key', secret: true },
  { name: 'LOG_LEVEL', pointer: '/log/level' },
];

/** What was taken from the environment: pointer → the variable as a report names it (never a secret's value). */
export type Overridden = Map<string, string>;

/** Sets each override that is set and not empty into `config` (sections exist already). */
export function applyEnvOverrides(config: Record<string, unknown>, env: Record<string, string | undefined>): Overridden {
  const overridden: Overridden = new Map();
  for (const { name, pointer, secret } of ENV_OVERRIDES) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    const [, section, key] = pointer.split('/') as [string, string, string];
    (config[section] as Record<string, unknown>)[key] = value;
    overridden.set(pointer, secret ? `${name} (from the environment)` : `${name}=${value}`);
  }
  return overridden;
}

/** A problem about an overridden value names the variable, not the file line it replaced. */
export function blameEnv(problem: Problem, overridden: Overridden): Problem {
  const from = overridden.get(problem.pointer);
  return from ? { file: 'env', line: 0, col: 0, pointer: problem.pointer, message: `${from}: ${problem.message}` } : problem;
}

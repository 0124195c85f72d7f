#!/usr/bin/env node
// The `gateway` command. `serve` runs the gateway in the foreground (logs to stdout, SIGTERM
// drains and stops). The operator commands are clients of the admin API, so they work the
// same whatever the store: they need GATEWAY_ADMIN_TOKEN and the gateway's URL.
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { loadConfigFile } from '../load-config.ts';
import { formatProblem, LoadError } from '../config/yaml-source.ts';
import { startGateway } from '../gateway.ts';
import type { Role } from '../stores.ts';
import { adminCommand, ADMIN_USAGE } from './admin-client.ts';
import { CHECK_USAGE, checkCommand } from './check.ts';
import { diffCommand, newVendorCommand, openapiCommand, routesCommand, TOOLS_USAGE } from './tools.ts';

const USAGE = `usage: gateway <command> [options]

  serve [--config config.yaml] [--role all|api|worker]
                                        run the gateway in the foreground (roles need the redis store)
${CHECK_USAGE}
${TOOLS_USAGE}
${ADMIN_USAGE}
Config: --config, else GATEWAY_CONFIG, else ./config.yaml. PORT, METRICS_PORT, REDIS_URL and the other
variables of docs/configuration.md (Environment overrides) replace the file's values.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'check':
      return checkCommand(rest);
    case 'routes':
      return routesCommand(rest);
    case 'diff':
      return diffCommand(rest);
    case 'openapi':
      return openapiCommand(rest);
    case 'new-vendor':
      return newVendorCommand(rest);
    case 'tenant':
    case 'key':
    case 'wallet':
    case 'limits':
      return adminCommand(command, rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE);
      return command === undefined ? 2 : 0;
    default:
      console.error(`unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

export function configPath(values: { config?: string }): string {
  return resolve(values.config ?? process.env.GATEWAY_CONFIG ?? 'config.yaml');
}

async function serve(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { config: { type: 'string' }, role: { type: 'string', default: 'all' } } });
  if (!['all', 'api', 'worker'].includes(values.role)) {
    console.error(`--role must be all, api or worker (got ${values.role})`);
    return 2;
  }
  let gateway;
  try {
    gateway = await startGateway(loadConfigFile(configPath(values)), { role: values.role as Role });
  } catch (err) {
    if (err instanceof LoadError) {
      for (const p of err.problems) console.error(formatProblem(p));
      console.error(`gateway: ${err.problems.length} problem(s); not started`);
      return 1;
    }
    throw err;
  }
  await new Promise<void>((done) => {
    const stop = (signal: string) => {
      gateway.logger.info({ signal }, 'shutting down');
      // close() cuts what is in flight at the end of the grace period; should anything still
      // hold it up, the process exits anyway shortly after (a supervisor's SIGKILL would follow).
      const graceMs = gateway.config.server.shutdown_grace_ms;
      setTimeout(() => {
        gateway.logger.error({ grace_ms: graceMs }, 'shutdown overran its grace period; exiting');
        void flushed().then(() => process.exit(1));
      }, graceMs + SHUTDOWN_OVERRUN_MS).unref();
      gateway.close().then(done, done);
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  return 0;
}

/** How long past server.shutdown_grace_ms a stuck shutdown is waited for before exiting. */
const SHUTDOWN_OVERRUN_MS = 2000;

/** Pipes are asynchronous: let what was written reach the reader before exiting. */
const flushed = () => Promise.all([process.stdout, process.stderr].map((s) => new Promise<void>((done) => s.write('', () => done()))));

main(process.argv.slice(2)).then(
  async (code) => {
    await flushed();
    process.exit(code);
  },
  async (err) => {
    console.error(err instanceof Error ? err.message : err);
    await flushed();
    process.exit(1);
  },
);

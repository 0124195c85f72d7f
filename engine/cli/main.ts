#!/usr/bin/env node
// The `gateway` command. `serve` runs the gateway in the foreground (logs to stdout, SIGTERM
// drains and stops). The operator commands are clients of the admin API, so they work the
// same whatever the store: they need GATEWAY_ADMIN_TOKEN and the gateway's URL.
import { adminCommand, ADMIN_USAGE } from './admin-client.ts';
import { CHECK_USAGE, checkCommand } from './check.ts';
import { diffCommand, newVendorCommand, openapiCommand, routesCommand, TOOLS_USAGE } from './tools.ts';
import { flushed, serve, SERVE_USAGE } from './serve.ts';

const USAGE = `usage: gateway <command> [options]

${SERVE_USAGE}
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

#!/usr/bin/env node
// The `gateway` command. `serve` runs the gateway in the foreground (logs to stdout, SIGTERM
// drains and stops). The operator commands are clients of the admin API, so they work the
// same whatever the store: they need GATEWAY_ADMIN_TOKEN and the gateway's URL.
//
// Each command's module is imported when that command runs: `serve` is a long-lived process, and
// what it imported for the operator commands (the checks, the diff, the scaffolds, the OpenAPI
// builder, with their dependencies) would stay in its memory for nothing (docs/performance.md).
import { flushed } from './flushed.ts';
import { helpFor, USAGE, wantsHelp } from './help.ts';

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command && !command.startsWith('-') && wantsHelp(rest)) {
    const help = helpFor(USAGE, command, rest);
    if (help) {
      console.log(help);
      return 0;
    }
  }
  switch (command) {
    case 'serve':
      return (await import('./serve.ts')).serve(rest);
    case 'check':
      return (await import('./check.ts')).checkCommand(rest);
    case 'routes':
      return (await import('./tools.ts')).routesCommand(rest);
    case 'diff':
      return (await import('./tools.ts')).diffCommand(rest);
    case 'openapi':
      return (await import('./tools.ts')).openapiCommand(rest);
    case 'new-vendor':
      return (await import('./tools.ts')).newVendorCommand(rest);
    case 'tenant':
    case 'key':
    case 'wallet':
    case 'limits':
      return (await import('./admin-client.ts')).adminCommand(command, rest);
    case 'help': {
      // `gateway help <command> [sub-command]`, as `gateway <command> --help`.
      const help = rest[0] ? helpFor(USAGE, rest[0], rest.slice(1)) : undefined;
      console.log(help ?? USAGE);
      return 0;
    }
    case undefined:
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

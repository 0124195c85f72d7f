// `--help` (or `-h`) on any command or sub-command: the entries of the usage text for it, e.g.
// `gateway check --help`, `gateway key --help` (every key command), `gateway key create --help`.
import { ADMIN_USAGE, CHECK_USAGE, SERVE_USAGE, TOOLS_USAGE } from './usage.ts';

/** Every command's usage: `gateway --help`. */
export const USAGE = `usage: gateway <command> [options]

${SERVE_USAGE}
${CHECK_USAGE}
${TOOLS_USAGE}
${ADMIN_USAGE}
Config: --config, else GATEWAY_CONFIG, else ./config.yaml. PORT, METRICS_PORT, REDIS_URL and the other
variables of docs/configuration.md (Environment overrides) replace the file's values.`;

/** The usage text's entries: an entry starts at a line indented two spaces and takes the deeper-indented lines after it. */
function entries(usage: string): string[][] {
  const out: string[][] = [];
  for (const line of usage.split('\n')) {
    if (/^ {2}\S/.test(line)) out.push([line]);
    else if (/^ {3,}\S/.test(line) && out.length) out.at(-1)!.push(line);
  }
  return out;
}

/** True when `args` asks for help. */
export function wantsHelp(args: readonly string[]): boolean {
  return args.includes('--help') || args.includes('-h');
}

/**
 * The usage of `command` (and its sub-command, the first word of `args` when it is not a flag),
 * from the whole usage text; `notes` are entries shown with every admin command (they begin "(").
 * Undefined when no entry names it.
 */
export function helpFor(usage: string, command: string, args: readonly string[]): string | undefined {
  const sub = args[0] && !args[0].startsWith('-') ? args[0] : undefined;
  const all = entries(usage);
  const named = (words: string[]) => all.filter((e) => e[0]!.trim().split(/\s+/).slice(0, words.length).join(' ') === words.join(' '));
  const found = (sub && named([command, sub]).length ? named([command, sub]) : named([command]));
  if (!found.length) return undefined;
  const notes = found.length && ['tenant', 'key', 'wallet', 'limits'].includes(command) ? all.filter((e) => e[0]!.trim().startsWith('(')) : [];
  return `usage: gateway\n${[...found, ...notes].map((e) => e.join('\n')).join('\n')}`;
}

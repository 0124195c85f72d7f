// `gateway check [paths]`: validate the config, the descriptors and their fixtures without
// serving (engine/tooling/checks.ts says what is checked). Each problem is printed as
// `file:line:col  /pointer  message  [check]`; exit 1 when any is an error.
import { parseArgs } from 'node:util';
import { runChecks } from '../tooling/checks.ts';
import { formatFinding, githubAnnotation } from '../tooling/findings.ts';
import { print } from './tools.ts';

export async function checkCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { config: { type: 'string' }, format: { type: 'string', default: 'text' }, strict: { type: 'boolean', default: false } },
  });
  if (!['text', 'json', 'github'].includes(values.format!)) {
    console.error(`--format must be text, json or github`);
    return 2;
  }
  const report = await runChecks({ config: values.config, paths: positionals });
  const failed = !report.ok || (values.strict && report.warnings > 0);
  if (values.format === 'json') {
    await print(`${JSON.stringify({ ...report, ok: !failed }, null, 2)}\n`);
  } else {
    const print = values.format === 'github' ? githubAnnotation : formatFinding;
    for (const f of report.findings) (f.severity === 'error' ? console.error : console.log)(print(f));
    const summary = `${report.errors} error(s), ${report.warnings} warning(s) in ${report.vendors} descriptor(s) read (${report.enabled} enabled, ${report.disabled} disabled), ${report.routes} route(s)`;
    if (failed) console.error(`check failed: ${summary}`);
    else console.log(`ok: ${summary}`);
  }
  return failed ? 1 : 0;
}

// `gateway check`: load and compile the config and every descriptor without serving, and
// report each problem as `file:line:col  /pointer  message`. Exit 1 on any problem.
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { loadConfigFile } from '../config/load-config.ts';
import { formatProblem, LoadError } from '../config/yaml-source.ts';
import { compileVendors } from '../descriptors/compile.ts';
import { loadVendorDir } from '../descriptors/load-descriptors.ts';
import { createUpstreamAgent } from '../upstream/client.ts';
import { createAjv } from '../validation/ajv.ts';
import { systemClock } from '../util/clock.ts';

export async function checkCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { config: { type: 'string' }, format: { type: 'string', default: 'text' } } });
  const dispatcher = createUpstreamAgent();
  try {
    const config = loadConfigFile(resolve(values.config ?? process.env.GATEWAY_CONFIG ?? 'config.yaml'));
    const ajv = createAjv({ useDefaults: true });
    const loaded = loadVendorDir(config.vendors.dir, ajv, config.vendors.disabled);
    const plans = compileVendors(loaded, {
      ajv, config, clock: systemClock, dispatcher,
      baseUrlFor: (v) => (config.sandbox.enabled ? `http://sandbox.invalid/${v}` : config.upstreams[v]?.base_url),
    });
    const routes = plans.reduce((n, v) => n + v.routes.length, 0);
    console.log(values.format === 'json' ? JSON.stringify({ ok: true, vendors: plans.length, routes }) : `ok: ${plans.length} vendor(s), ${routes} route(s)`);
    return 0;
  } catch (err) {
    if (!(err instanceof LoadError)) throw err;
    if (values.format === 'json') console.log(JSON.stringify({ ok: false, problems: err.problems }));
    else for (const p of err.problems) console.error(formatProblem(p));
    return 1;
  } finally {
    await dispatcher.close();
  }
}

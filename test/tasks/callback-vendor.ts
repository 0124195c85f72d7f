// provider_d as shipped, with a push callback declared on model D's route (no shipped vendor
// documents one): the callback URL in parameters.callback_url, the pushed body shaped as its
// poll answer. Used by test/tasks/callbacks.test.ts and test/redis/push-race.test.ts.
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers/gateway.ts';

export function vendorsWithCallback(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-callback-'));
  cpSync(join(ROOT, 'vendors/provider_d'), join(dir, 'provider_d'), { recursive: true });
  const yaml = readFileSync(join(ROOT, 'vendors/provider_d.yaml'), 'utf8');
  const anchor = '        path: /api/v1/tasks/{upstream_task_id}/cancel\n    result:\n      images:';
  expect(yaml).to.contain(anchor);
  writeFileSync(
    join(dir, 'provider_d.yaml'),
    yaml.replace(anchor, '        path: /api/v1/tasks/{upstream_task_id}/cancel\n      callback:\n        url_field: parameters.callback_url\n        status: output.task_status\n    result:\n      images:'),
  );
  return dir;
}

// What the config schema cannot say about `results:` (the schema fills the defaults): the
// loader runs this, so `gateway check` and `serve` refuse the same configs.
import type { ConfigProblem } from '../errors/config-error.ts';
import type { ResultsConfig } from '../config/types.ts';
import { AddressPolicy } from '../webhooks/ssrf.ts';

export function resultsConfigProblems(c: ResultsConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  c.allow_private_cidrs.forEach((cidr, i) => {
    try {
      AddressPolicy.fromCidrs([cidr]);
    } catch (err) {
      problems.push({ pointer: `/results/allow_private_cidrs/${i}`, message: (err as Error).message });
    }
  });
  if (c.store === 's3') {
    if (!c.s3.bucket) problems.push({ pointer: '/results/s3', message: 'results.store is s3: set s3.bucket' });
    if (!c.s3.access_key_id !== !c.s3.secret_access_key) problems.push({ pointer: '/results/s3', message: 'set both access_key_id and secret_access_key, or neither (the AWS SDK then finds credentials in the environment)' });
  }
  return problems;
}

/** A warning, not a refusal: `local` in Redis mode works only when every process shares the directory. */
export function resultsConfigWarnings(c: ResultsConfig, storeKind: 'memory' | 'redis', ledgerRetentionHours = 0): ConfigProblem[] {
  if (c.store === 'off' && storeKind === 'redis' && ledgerRetentionHours > 0) {
    return [{ pointer: '/results/store', message: `results.store is off: the ledger archive still writes to ${c.local.dir}, which every gateway process must share in Redis mode; with several hosts use s3 (docs/decisions.md)` }];
  }
  if (c.store !== 'local' || storeKind !== 'redis') return [];
  return [{ pointer: '/results/store', message: `results.store is local in Redis mode: every gateway process must see the same directory (${c.local.dir}), e.g. a shared volume; with several hosts use s3 (docs/results.md)` }];
}

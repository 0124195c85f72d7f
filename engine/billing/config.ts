// The `billing:` section of config.yaml, with its defaults:
//   billing:
//     credits_per_usd: 100            # integer; 1 USD = 100 credits (the spec's 10 USD = 1000.00 credits)
//     low_balance:
//       threshold_credits: "1000.00"  # default balance.low threshold (per-tenant override: BillingService.setThreshold)
//       throttle_seconds: 86400       # while ALERTED, at most one balance.low reminder per window
import { ConfigValueError, configPointer, type ConfigProblem } from '../errors/config-error.ts';
import { creditsToMilli, MoneyError, type Milli } from '../util/money.ts';

export interface BillingConfigInput {
  credits_per_usd?: number;
  low_balance?: {
    threshold_credits?: string | number;
    throttle_seconds?: number;
  };
}

export interface BillingConfig {
  creditsPerUsd: number;
  lowBalanceThreshold: Milli;
  lowBalanceThrottleMs: number;
}

export const BILLING_DEFAULTS = Object.freeze({
  credits_per_usd: 100,
  threshold_credits: '1000.00',
  throttle_seconds: 86_400,
});

/** Defaults filled in; throws one ConfigValueError naming every unusable value by its pointer under /billing. */
export function resolveBillingConfig(input: BillingConfigInput = {}): BillingConfig {
  const problems: ConfigProblem[] = [];
  const at = (message: string, ...path: string[]) => problems.push({ pointer: configPointer('billing', ...path), message });
  const creditsPerUsd = input.credits_per_usd ?? BILLING_DEFAULTS.credits_per_usd;
  if (!Number.isSafeInteger(creditsPerUsd) || creditsPerUsd <= 0) at(`must be a positive integer, got ${creditsPerUsd}`, 'credits_per_usd');
  let threshold: Milli = 0;
  try {
    threshold = creditsToMilli(input.low_balance?.threshold_credits ?? BILLING_DEFAULTS.threshold_credits, 'the threshold');
    if (threshold < 0) at('must not be negative', 'low_balance', 'threshold_credits');
  } catch (err) {
    if (!(err instanceof MoneyError)) throw err;
    at(err.message, 'low_balance', 'threshold_credits');
  }
  const throttle = input.low_balance?.throttle_seconds ?? BILLING_DEFAULTS.throttle_seconds;
  if (!Number.isSafeInteger(throttle) || throttle < 0) at(`must be a non-negative integer, got ${throttle}`, 'low_balance', 'throttle_seconds');
  if (problems.length) throw new ConfigValueError(problems);
  return { creditsPerUsd, lowBalanceThreshold: threshold, lowBalanceThrottleMs: throttle * 1000 };
}

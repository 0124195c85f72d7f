// The `billing:` section of config.yaml, with its defaults:
//   billing:
//     credits_per_usd: 100            # integer; 1 USD = 100 credits (the spec's 10 USD = 1000.00 credits)
//     low_balance:
//       threshold_credits: "1000.00"  # default balance.low threshold (per-tenant override: BillingService.setThreshold)
//       throttle_seconds: 86400       # while ALERTED, at most one balance.low reminder per window
import { creditsToMilli, type Milli } from './money.ts';

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

export function resolveBillingConfig(input: BillingConfigInput = {}): BillingConfig {
  const creditsPerUsd = input.credits_per_usd ?? BILLING_DEFAULTS.credits_per_usd;
  if (!Number.isSafeInteger(creditsPerUsd) || creditsPerUsd <= 0) {
    throw new Error(`billing.credits_per_usd must be a positive integer, got ${creditsPerUsd}`);
  }
  const threshold = creditsToMilli(input.low_balance?.threshold_credits ?? BILLING_DEFAULTS.threshold_credits, 'billing.low_balance.threshold_credits');
  if (threshold < 0) throw new Error('billing.low_balance.threshold_credits must not be negative');
  const throttle = input.low_balance?.throttle_seconds ?? BILLING_DEFAULTS.throttle_seconds;
  if (!Number.isSafeInteger(throttle) || throttle < 0) {
    throw new Error(`billing.low_balance.throttle_seconds must be a non-negative integer, got ${throttle}`);
  }
  return { creditsPerUsd, lowBalanceThreshold: threshold, lowBalanceThrottleMs: throttle * 1000 };
}

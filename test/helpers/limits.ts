// Limits configurations for the limits tests.
import type { LimitsConfigInput } from '../../engine/limits/config.ts';

const none = { per_second: null, per_minute: null, per_day: null };

/** Only the rate windows a test names are limited (the defaults limit several). */
export function only(rate: LimitsConfigInput['rate'], extra: Omit<LimitsConfigInput, 'rate'> = {}): LimitsConfigInput {
  return { rate: { key: { ...none, ...rate?.key }, tenant: { ...none, ...rate?.tenant }, model: { ...none, ...rate?.model } }, ...extra };
}

// The limits section of a config for tests and benchmarks that are not about limits. A module of
// its own, without imports: a benchmark's gateway process (bench/media-gateway.ts) takes it
// without loading the engine's TypeScript sources beside the compiled engine it runs.

/** Tests that are not about limits poll fast; lift the rate limits unless a test sets its own. */
export const NO_LIMITS = `limits:
  rate:
    key: { per_second: null, per_minute: null, per_day: null }
    tenant: { per_second: null, per_minute: null, per_day: null }
    model: { per_second: null, per_minute: null, per_day: null }
  concurrent_tasks: null
  daily_spend_credits: null`;

// The `webhooks:` section of config.yaml, validated once at start-up with the spec's limits
// as defaults. `time_scale` multiplies every delivery duration (retry delays, the attempt
// timeout and the rate-limit window) so lifecycle tests run in seconds; it does not touch the
// log retention, which follows the injected clock.
import { readFileSync } from 'node:fs';
import { ConfigValueError, configPointer, type ConfigProblem } from '../errors/config-error.ts';
import { AddressPolicy } from './ssrf.ts';
import { scaledTimeout } from '../util/clock.ts';

export interface WebhookConfig {
  /** Endpoints per tenant (spec: 5). */
  max_endpoints: number;
  /** Attempt timeout: a 2xx must arrive within it (spec: 30 s). Scaled, never below 1 s (util/clock.ts scaledTimeout). */
  timeout_ms: number;
  /** Delay before retry n (spec: 15 s, 1 min, 5 min, 30 min, 1 h → 6 attempts). Scaled. */
  retry_schedule_ms: number[];
  time_scale: number;
  /** Attempts per endpoint per (scaled) minute (spec: 600). Excess waits for a free slot. */
  rate_limit_per_minute: number;
  /**
   * Safety margin (real ms, not scaled) added to the rate window when planning slots: a send
   * can start a little after its slot (a busy event loop, a fresh TLS handshake) while the
   * next window's sends start on time; the margin keeps the receiver's view within the limit.
   * A send that would start later than that is not made but planned again (dispatcher.ts).
   */
  rate_limit_margin_ms: number;
  /** Largest body sent as is (spec: 64 KB); bigger events go out thin (see payload.ts). */
  max_payload_bytes: number;
  /** Deliveries and attempts older than this are purged (spec: 30 days). Not scaled. */
  retention_days: number;
  /** How often the purge job runs. Not scaled. */
  purge_interval_ms: number;
  /** Operator allow-list of otherwise refused (private, loopback, ...) destinations. */
  allow_private_cidrs: string[];
  /** Extra CAs the HTTPS client trusts besides Node's own store (see sender.ts): PEM text or file paths. */
  ca_pem: string[];
  /** Piscina pool: worker threads and concurrent in-flight attempts per thread. */
  pool_max_threads: number;
  pool_concurrency_per_thread: number;
}

export const WEBHOOK_DEFAULTS: Readonly<WebhookConfig> = Object.freeze({
  max_endpoints: 5,
  timeout_ms: 30_000,
  retry_schedule_ms: [15_000, 60_000, 300_000, 1_800_000, 3_600_000],
  time_scale: 1,
  rate_limit_per_minute: 600,
  rate_limit_margin_ms: 100,
  max_payload_bytes: 64 * 1024,
  retention_days: 30,
  purge_interval_ms: 3_600_000,
  allow_private_cidrs: [],
  ca_pem: [],
  pool_max_threads: 2,
  pool_concurrency_per_thread: 64,
});

const MINUTE_MS = 60_000;

/**
 * Fill defaults and check types; throws one ConfigValueError listing every problem, each at its
 * pointer under /webhooks (the config loader runs this too, so `check` and `serve` refuse the
 * same configs). `ca_pem` entries that are not PEM text are read as file paths here, once.
 */
export function resolveWebhookConfig(raw: Record<string, unknown> = {}): WebhookConfig {
  const problems: ConfigProblem[] = [];
  const at = (message: string, ...path: (string | number)[]) => problems.push({ pointer: configPointer('webhooks', ...path), message });
  const known = new Set(Object.keys(WEBHOOK_DEFAULTS));
  for (const key of Object.keys(raw)) if (!known.has(key)) at('unknown setting', key);

  const num = (key: keyof WebhookConfig, min: number, integer = true): number => {
    const v = raw[key] ?? WEBHOOK_DEFAULTS[key];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || (integer && !Number.isInteger(v))) {
      at(`expected ${integer ? 'an integer' : 'a number'} >= ${min}`, key);
      return WEBHOOK_DEFAULTS[key] as number;
    }
    return v;
  };
  const list = <T>(key: keyof WebhookConfig, ok: (x: unknown) => x is T, what: string): T[] => {
    const v = raw[key] ?? WEBHOOK_DEFAULTS[key];
    if (!Array.isArray(v) || !v.every(ok)) {
      at(`expected a list of ${what}`, key);
      return [...(WEBHOOK_DEFAULTS[key] as T[])];
    }
    return [...v];
  };
  const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && x >= 0;
  const isStr = (x: unknown): x is string => typeof x === 'string' && x.length > 0;

  const config: WebhookConfig = {
    max_endpoints: num('max_endpoints', 1),
    timeout_ms: num('timeout_ms', 1),
    retry_schedule_ms: list('retry_schedule_ms', isNum, 'non-negative numbers (ms)'),
    time_scale: num('time_scale', Number.MIN_VALUE, false),
    rate_limit_per_minute: num('rate_limit_per_minute', 1),
    rate_limit_margin_ms: num('rate_limit_margin_ms', 0),
    max_payload_bytes: num('max_payload_bytes', 1024),
    retention_days: num('retention_days', 0, false),
    purge_interval_ms: num('purge_interval_ms', 1),
    allow_private_cidrs: list('allow_private_cidrs', isStr, 'CIDR strings'),
    ca_pem: list('ca_pem', isStr, 'PEM strings or file paths'),
    pool_max_threads: num('pool_max_threads', 1),
    pool_concurrency_per_thread: num('pool_concurrency_per_thread', 1),
  };

  config.allow_private_cidrs.forEach((cidr, i) => {
    try {
      AddressPolicy.fromCidrs([cidr]);
    } catch (err) {
      at((err as Error).message, 'allow_private_cidrs', i);
    }
  });
  config.ca_pem = config.ca_pem.map((entry, i) => {
    if (entry.includes('-----BEGIN CERTIFICATE-----')) return entry;
    try {
      return readFileSync(entry, 'utf8');
    } catch {
      at(`cannot read CA file ${entry}`, 'ca_pem', i);
      return '';
    }
  });

  if (problems.length > 0) throw new ConfigValueError(problems);
  return Object.freeze(config);
}

/** Durations as actually used, after time_scale. */
export function scaled(config: WebhookConfig) {
  const s = config.time_scale;
  return {
    timeoutMs: scaledTimeout(config.timeout_ms, s),
    retryDelaysMs: config.retry_schedule_ms.map((ms) => Math.round(ms * s)),
    rateWindowMs: Math.max(1, Math.round(MINUTE_MS * s)) + config.rate_limit_margin_ms,
    // Bursts go out at most at twice the average allowed rate (600/min: one per 50 ms), not
    // all in the same millisecond: gentler on receivers, and it keeps the per-window bound
    // true at the receiver even when a burst has to open fresh TLS connections first.
    rateMinGapMs: (MINUTE_MS * s + config.rate_limit_margin_ms) / (2 * config.rate_limit_per_minute),
  };
}

/** Attempts in one series: the first plus one per retry delay. */
export const maxAttempts = (config: WebhookConfig): number => config.retry_schedule_ms.length + 1;

// The validated shape of config.yaml (schemas/config.schema.json is the source of truth).
export interface GatewayConfig {
  server: {
    host: string;
    port: number;
    body_limit_bytes: number;
    media_body_limit_bytes: number;
    shutdown_grace_ms: number;
    /** A client must send its request line and headers within this (then 408, closed). */
    headers_timeout_ms: number;
    /** ...and its whole request, body included, within this (0: no limit). */
    request_timeout_ms: number;
    trust_proxy: boolean;
  };
  store: {
    kind: 'memory' | 'redis';
    redis_url: string;
    key_prefix: string;
    job_lock_ms: number;
    task_retention_hours: number;
    /** memory: ledger entries kept per wallet, newest first (balances stay exact). */
    memory_ledger_entries: number;
    /** redis: a store command not answered within this fails its request with 503 / 4003 (not scaled). */
    command_timeout_ms: number;
  };
  sandbox: { enabled: boolean; demo_api_key?: string; demo_credits: string; queued_ms: number; running_ms: number };
  admin: { token: string };
  timing: { scale: number; poll_error_limit: number; sweep_interval_ms: number; sweep_grace_ms: number };
  billing: Record<string, unknown>;
  limits: Record<string, unknown>;
  webhooks: Record<string, unknown>;
  log: { level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent' };
  vendors: { dir: string; disabled: string[] };
  upstreams: Record<string, UpstreamConfig>;
}

export interface UpstreamConfig {
  base_url?: string;
  credentials?: Record<string, string>;
  timeout_ms?: number;
}

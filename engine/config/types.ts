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
    /**
     * Credential guessing: failed authentications from one client address (X-Forwarded-For's
     * client with trust_proxy) answered 429 / 1006 once `limit` are counted in a window of
     * `window_seconds` (until it ends). limit 0: off.
     */
    failed_auth: { limit: number; window_seconds: number };
    /** The gateway's address as providers reach it: enables push callbacks (routes with upstream.callback). */
    public_base_url?: string;
    /** Task submissions and polls running in one process past which creates are refused (503 / 4001). */
    max_task_calls_running: number;
  };
  store: {
    kind: 'memory' | 'redis';
    redis_url: string;
    /** redis: the nodes of a Redis Cluster to start from (`redis://host:port`); when set, redis_url is not used. */
    redis_cluster_nodes?: string[];
    key_prefix: string;
    job_lock_ms: number;
    task_retention_hours: number;
    /** Ledger lines older than this leave the store for the ledger archive (engine/billing/ledger-archive.ts); 0: kept in the store. */
    ledger_retention_hours: number;
    /** How often a worker archives due ledger lines (scaled by timing.scale). */
    ledger_archive_interval_ms: number;
    /** Settled and released holds are forgotten this long after they closed (both stores). */
    hold_retention_hours: number;
    /** memory: ledger entries kept per wallet, newest first (balances stay exact). */
    memory_ledger_entries: number;
    /** memory: finished tasks kept at most; past it the oldest finished are forgotten (404) first. */
    memory_finished_tasks: number;
    /** redis: a store command not answered within this fails its request with 503 / 4003 (not scaled). */
    command_timeout_ms: number;
  };
  sandbox: { enabled: boolean; demo_api_key?: string; demo_credits: string; queued_ms: number; running_ms: number };
  admin: { token: string };
  /** The console's sessions (engine/tenants/sessions.ts). */
  console: { session_ttl_seconds: number };
  timing: { scale: number; poll_error_limit: number; sweep_interval_ms: number; sweep_grace_ms: number };
  billing: Record<string, unknown>;
  limits: Record<string, unknown>;
  webhooks: Record<string, unknown>;
  results: ResultsConfig;
  log: { level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent' };
  tracing: TracingConfig;
  metrics: MetricsConfig;
  /** `enabled`: the descriptors served, by name; the others in `dir` are not even read. */
  vendors: { dir: string; enabled: string[] };
  upstreams: Record<string, UpstreamConfig>;
}

/** The result store (engine/results/, docs/results.md); defaults filled in by the schema. */
export interface ResultsConfig {
  store: 'local' | 's3' | 'off';
  /** The result host; unset: server.public_base_url, else the gateway's listening address. */
  base_url?: string;
  retention_hours: number;
  max_file_bytes: number;
  connect_timeout_ms: number;
  idle_timeout_ms: number;
  copy_timeout_ms: number;
  sweep_interval_ms: number;
  allow_private_cidrs: string[];
  content_types: { images: string[]; videos: string[]; audios: string[] };
  local: { dir: string };
  s3: { bucket?: string; prefix: string; region: string; endpoint?: string; force_path_style: boolean; access_key_id?: string; secret_access_key?: string; presign: boolean };
}

/** Prometheus metrics (engine/metrics/): GET /metrics on its own listener, off the tenant-facing port. */
export interface MetricsConfig {
  enabled: boolean;
  /** The metrics listener (port 0: any free port); null: no listener (then serve them behind `token`). */
  host: string;
  port: number | null;
  /** When set, GET /metrics also answers on the main port for `Authorization: Bearer <token>`, and the listener asks for it too. */
  token: string | null;
  /** Add a capped tenant label (gateway_tenant_requests_total); tenants past the cap count as "_other". 0: off. */
  tenant_label_max: number;
}

/** OpenTelemetry tracing (engine/tracing/); off by default. */
export interface TracingConfig {
  enabled: boolean;
  /** OTLP/HTTP traces URL, e.g. http://127.0.0.1:4318/v1/traces. */
  otlp_endpoint: string;
  service_name: string;
  /** 0..1: the share of new traces recorded; a sampled caller's trace is always recorded (parent-based). */
  sample_ratio: number;
  /** Sent with every export request. */
  headers: Record<string, string>;
  /** How long finished spans wait to be batched into one export. */
  export_delay_ms: number;
}

/** A vendor's upstream: one base URL (a pool of one, member "default"), or a pool of members. */
export interface UpstreamConfig {
  base_url?: string;
  credentials?: Record<string, string>;
  /** The single upstream's timeout; with members, the default of each member's. */
  timeout_ms?: number;
  members?: UpstreamMemberConfig[];
  /** The members' circuit breaker (engine/upstream/pool.ts); defaults filled in by the schema. */
  breaker?: { failures: number; cooldown_ms: number };
}

export interface UpstreamMemberConfig {
  id: string;
  base_url?: string;
  credentials?: Record<string, string>;
  /** Share of new calls among the healthy members (default 1). */
  weight: number;
  timeout_ms?: number;
}

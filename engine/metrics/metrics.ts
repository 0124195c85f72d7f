// The gateway's Prometheus metrics (prom-client), on the ground floor so every layer records
// its own signal where it happens: the front door and the proxy's access line (HTTP), the
// upstream client and the task lifecycle (upstream, tasks), billing and limits, webhook
// deliveries, the job queues. One process-wide registry: a process runs one gateway (tests that
// start several read deltas). Labels are bounded sets — route ids, vendors, stages, status
// classes, service codes, outcomes — never a tenant, key or task id; the one opt-in tenant
// label (gateway_tenant_requests_total) is capped. The metric catalogue in docs/operating.md, the alert rules and
// the dashboard in ops/ are held to this file by test/ops/prometheus.test.ts.
import { readFileSync } from 'node:fs';
import client from 'prom-client';

export const registry = new client.Registry();
// Process and Node.js metrics (CPU, memory, heap, GC, event-loop delay and utilisation), with
// prom-client's standard names so stock dashboards work.
client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });

const registers = [registry];
const SECONDS_FAST = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const SECONDS_SLOW = [1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 21600, 86400];

// ---- HTTP (taken once per request, with the access line) -------------------------------------
export const httpRequests = new client.Counter({
  name: 'gateway_http_requests_total',
  help: 'Requests answered, by route id (a descriptor route key, or a control-plane path pattern), method, status class and service error code ("" on success).',
  labelNames: ['route', 'method', 'status_class', 'code'] as const,
  registers,
});
export const httpDuration = new client.Histogram({
  name: 'gateway_http_request_duration_seconds',
  help: 'Time from the request reaching the gateway to its answer being written (a stream: to its end).',
  labelNames: ['route', 'method', 'status_class'] as const,
  buckets: SECONDS_FAST,
  registers,
});
export const httpInFlight = new client.Gauge({
  name: 'gateway_http_requests_in_flight',
  help: 'Requests received and not yet answered.',
  registers,
});
export const tenantRequests = new client.Counter({
  name: 'gateway_tenant_requests_total',
  help: 'Requests by tenant (only when metrics.tenant_label is on; tenants past its cap count as "_other").',
  labelNames: ['tenant', 'status_class'] as const,
  registers,
});

// ---- Upstream -------------------------------------------------------------------------------
export const upstreamRequests = new client.Counter({
  name: 'gateway_upstream_requests_total',
  help: 'Calls to providers by vendor, stage (submit, poll, cancel, proxy, list; callback: their valid pushes) and answer status class ("error" when no answer came).',
  labelNames: ['vendor', 'stage', 'status_class'] as const,
  registers,
});
export const upstreamErrors = new client.Counter({
  name: 'gateway_upstream_errors_total',
  help: 'Provider failures by vendor, stage and the 3xxx service code they were mapped to.',
  labelNames: ['vendor', 'stage', 'code'] as const,
  registers,
});
export const descriptorDefects = new client.Counter({
  name: 'gateway_descriptor_defects_total',
  help: "A descriptor's expression that failed on a provider's answer (4011): a defect of the descriptor, not the provider's.",
  labelNames: ['vendor', 'route', 'expression'] as const,
  registers,
});
export const upstreamDuration = new client.Histogram({
  name: 'gateway_upstream_request_duration_seconds',
  help: 'Provider call time by vendor and stage (proxy: to the end of the answer or stream).',
  labelNames: ['vendor', 'stage'] as const,
  buckets: SECONDS_FAST,
  registers,
});
export const upstreamTtfb = new client.Histogram({
  name: 'gateway_upstream_time_to_first_byte_seconds',
  help: 'Streamed proxy calls: time from sending the request upstream to the provider\'s response headers.',
  labelNames: ['vendor'] as const,
  buckets: SECONDS_FAST,
  registers,
});

// Pool members (engine/upstream/pool.ts): member ids come from config, so the label is bounded.
export const memberRequests = new client.Counter({
  name: 'gateway_upstream_member_requests_total',
  help: 'Calls to each pool member by vendor, member and stage (submit, poll, cancel, proxy).',
  labelNames: ['vendor', 'member', 'stage'] as const,
  registers,
});
export const memberErrors = new client.Counter({
  name: 'gateway_upstream_member_errors_total',
  help: 'Calls to a pool member that counted against its breaker, by vendor, member, stage and reason (connect, timeout, 5xx, 429).',
  labelNames: ['vendor', 'member', 'stage', 'reason'] as const,
  registers,
});
export const memberFailovers = new client.Counter({
  name: 'gateway_upstream_failovers_total',
  help: 'Calls moved to the next pool member after a failure before the provider accepted them, by vendor and stage (submit, proxy).',
  labelNames: ['vendor', 'stage'] as const,
  registers,
});
export const memberBreakerState = new client.Gauge({
  name: 'gateway_upstream_breaker_state',
  help: 'Each pool member\'s circuit breaker as this process last saw it: 0 closed, 1 half-open, 2 open.',
  labelNames: ['vendor', 'member'] as const,
  registers,
});

// ---- Tasks ----------------------------------------------------------------------------------
export const tasksCreated = new client.Counter({
  name: 'gateway_tasks_created_total',
  help: 'Tasks accepted (202) by vendor and route.',
  labelNames: ['vendor', 'route'] as const,
  registers,
});
export const tasksFinished = new client.Counter({
  name: 'gateway_tasks_finished_total',
  help: 'Tasks that reached a terminal state, by vendor, route, outcome (completed, failed) and service code of a failure (4008: the safety-net timeout).',
  labelNames: ['vendor', 'route', 'outcome', 'code'] as const,
  registers,
});
export const taskDuration = new client.Histogram({
  name: 'gateway_task_duration_seconds',
  help: 'Time from a task\'s creation to its terminal state, by vendor and outcome.',
  labelNames: ['vendor', 'outcome'] as const,
  buckets: SECONDS_SLOW,
  registers,
});
export const tasksActive = new client.Gauge({
  name: 'gateway_tasks_active',
  help: 'Tasks pending or processing, by vendor (read from the store at scrape time: the same figure on every process).',
  labelNames: ['vendor'] as const,
  registers,
  aggregator: 'first', // the same in every process: `serve --workers` shows it once
  async collect() {
    await scrapeSources.activeTasks?.(this);
  },
});
export const taskCallsRunning = new client.Gauge({
  name: 'gateway_task_calls_running',
  help: 'Task submissions and polls this process has started and not finished: its own backlog, bounded by server.max_task_calls_running.',
  registers,
  collect() {
    scrapeSources.taskCalls?.(this);
  },
});
export const sweepRedrives = new client.Counter({
  name: 'gateway_task_sweep_redrives_total',
  help: 'Tasks the safety sweep had to re-drive or finish (a lost timer, a process killed mid-task).',
  registers,
});
export const submissionsUnknown = new client.Counter({
  name: 'gateway_task_submissions_unknown_total',
  help: 'Submissions whose outcome was unknown (their process died between sending the task and recording the provider\'s answer), by vendor, route and what was done: redriven (the provider dedupes by the declared idempotency header) or failed (4010; the provider may have taken, and may bill, the task).',
  labelNames: ['vendor', 'route', 'action'] as const,
  registers,
});

// ---- Billing and limits ---------------------------------------------------------------------
/** Milli-credits moved since the last scrape: billing adds to these (three labelled incs a sync chat made ~0.4 KB of garbage); the counter takes them at scrape. */
export const creditsMoved = { held: 0, settled: 0, released: 0, charged: 0, topped_up: 0 };
export const credits = new client.Counter({
  name: 'gateway_billing_credits_total',
  help: 'Credits moved, by operation: held (reserved for a task or a chat), settled (charged from a hold), released (given back), charged (a chat\'s usage beyond its hold), topped_up.',
  labelNames: ['operation'] as const,
  registers,
  collect() {
    for (const operation of Object.keys(creditsMoved) as (keyof typeof creditsMoved)[]) {
      if (creditsMoved[operation] > 0) this.inc({ operation }, creditsMoved[operation] / 1000);
      creditsMoved[operation] = 0;
    }
  },
});
export const fundsRefusals = new client.Counter({
  name: 'gateway_billing_refusals_total',
  help: 'Requests refused for insufficient funds (402, code 1003).',
  registers,
});
export const chargeWriteFailures = new client.Counter({
  name: 'gateway_charge_write_failures_total',
  help: 'Writes of a request\'s charge the store refused, by step: hold (before the upstream: the request was answered 503, nothing served), settle and release (after the answer: retried until the store takes them).',
  labelNames: ['step'] as const,
  registers,
});
export const authFailures = new client.Counter({
  name: 'gateway_auth_failures_total',
  help: 'Failed authentications with a presented credential, by credential (api_key, console_sign_in, operator_sign_in, admin_token) and answer (401 rejected; 429 throttled: the client address is over server.failed_auth).',
  labelNames: ['credential', 'answer'] as const,
  registers,
});

export const limitRefusals = new client.Counter({
  name: 'gateway_limit_refusals_total',
  help: 'Requests refused by a limit (429), by kind: rate_key, rate_tenant, rate_model, concurrency, daily_spend.',
  labelNames: ['kind'] as const,
  registers,
});

// ---- Webhooks and the job queue -------------------------------------------------------------
export const webhookAttempts = new client.Counter({
  name: 'gateway_webhook_attempts_total',
  help: 'Delivery attempts by outcome: delivered (2xx), http_error (another status), network_error (no answer: connect, TLS, timeout, an address refused by the SSRF rules).',
  labelNames: ['outcome'] as const,
  registers,
});
export const webhookFailures = new client.Counter({
  name: 'gateway_webhook_deliveries_failed_total',
  help: 'Deliveries given up after their last retry (a 410 counts in gateway_webhook_endpoints_disabled_total instead).',
  registers,
});
export const webhookLatency = new client.Histogram({
  name: 'gateway_webhook_delivery_latency_seconds',
  help: 'Time from an event to its successful delivery (retries included).',
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 28800],
  registers,
});
export const webhookSlotsMissed = new client.Counter({
  name: 'gateway_webhook_send_slots_missed_total',
  help: 'Webhook sends not made because they would have started later than their rate-limit slot allows (a stalled event loop or a backed-up send pool); each is planned again.',
  registers,
});
export const webhookEndpointsDisabled = new client.Counter({
  name: 'gateway_webhook_endpoints_disabled_total',
  help: 'Endpoints disabled because the receiver answered 410 Gone.',
  registers,
});
export const jobQueueDepth = new client.Gauge({
  name: 'gateway_job_queue_depth',
  help: 'Jobs waiting in a queue (due or delayed), by queue (read at scrape time).',
  labelNames: ['queue', 'state'] as const,
  registers,
  aggregator: 'first', // the same in every process: `serve --workers` shows it once
  async collect() {
    await readQueues();
  },
});
export const jobQueueLag = new client.Gauge({
  name: 'gateway_job_queue_lag_seconds',
  help: 'How long the oldest due job of a queue has waited past its due time (0 when none waits).',
  labelNames: ['queue'] as const,
  registers,
  aggregator: 'first', // the same in every process: `serve --workers` shows it once
  async collect() {
    await readQueues();
  },
});

// ---- Result store (engine/results/) ----------------------------------------------------------
export const resultBytesCopied = new client.Counter({
  name: 'gateway_result_bytes_copied_total',
  help: 'Bytes of result files copied from providers into the result store, by vendor.',
  labelNames: ['vendor'] as const,
  registers,
});
export const resultBytesServed = new client.Counter({
  name: 'gateway_result_bytes_served_total',
  help: 'Bytes of result files sent to clients by the result host (a presigned redirect sends none).',
  registers,
});
export const resultCopyFailures = new client.Counter({
  name: 'gateway_result_copy_failures_total',
  help: 'Failed copies of a task\'s result files, by vendor and reason: refused_address, too_large, content_type, http_status, network, timeout, store.',
  labelNames: ['vendor', 'reason'] as const,
  registers,
});
export const resultCopyDuration = new client.Histogram({
  name: 'gateway_result_copy_duration_seconds',
  help: 'Time to copy all result files of a task (successful copies).',
  labelNames: ['vendor'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
  registers,
});
export const resultFilesHeld = new client.Gauge({
  name: 'gateway_result_files',
  help: 'Result files held in the result store, as counted by the last retention sweep of this process.',
  registers,
});
export const resultBytesHeld = new client.Gauge({
  name: 'gateway_result_stored_bytes',
  help: 'Bytes of result files held in the result store, as counted by the last retention sweep of this process.',
  registers,
});
export const resultFilesDeleted = new client.Counter({
  name: 'gateway_result_files_deleted_total',
  help: 'Result files deleted by the retention sweep once expired.',
  registers,
});

export const ledgerLinesArchived = new client.Counter({
  name: 'gateway_ledger_lines_archived_total',
  help: 'Ledger lines moved from the store to the ledger archive (written, read back, then trimmed).',
  registers,
});
export const ledgerArchiveFailures = new client.Counter({
  name: 'gateway_ledger_archive_failures_total',
  help: 'Runs of the ledger archive that failed for a tenant (the lines stay in the store; retried next run).',
  registers,
});

// ---- Readiness and build --------------------------------------------------------------------
export const dependencyUp = new client.Gauge({
  name: 'gateway_dependency_up',
  help: 'Whether a dependency answers (1) or not (0), by dependency (store, job_queue), checked at scrape time as /readyz checks it.',
  labelNames: ['dependency'] as const,
  registers,
  async collect() {
    await scrapeSources.dependencies?.(this);
  },
});
export const buildInfo = new client.Gauge({
  name: 'gateway_build_info',
  help: 'Always 1; the gateway\'s version and Node.js version as labels (deploy markers).',
  labelNames: ['version', 'node'] as const,
  registers,
  aggregator: 'first', // the same in every process: `serve --workers` shows it once
});
buildInfo.set({ version: (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version, node: process.versions.node }, 1);

// ---- `serve --workers` (engine/cluster): set by the primary only ---------------------------------
export const clusterWorkers = new client.Gauge({
  name: 'gateway_cluster_workers',
  help: 'serve --workers: worker processes by state, configured (N) and ready (started and answering).',
  labelNames: ['state'] as const,
  registers,
  aggregator: 'first',
});
export const clusterRestarts = new client.Counter({
  name: 'gateway_cluster_worker_restarts_total',
  help: 'serve --workers: workers that exited unasked and were started again, by worker slot (1..N).',
  labelNames: ['worker'] as const,
  registers,
});

/**
 * What GET /metrics serves: this process's registry; under `serve --workers`, the sum over every
 * worker (the primary collects it; a worker asks the primary).
 */
let exposition: () => Promise<string> = () => registry.metrics();
export const metricsText = (): Promise<string> => exposition();
export function setMetricsText(text: () => Promise<string>): void {
  exposition = text;
}

/** What is read from the running gateway at scrape time (set by the gateway, cleared on close). */
export interface ScrapeSources {
  activeTasks?: (gauge: typeof tasksActive) => Promise<void>;
  queues?: (depth: typeof jobQueueDepth, lag: typeof jobQueueLag) => Promise<void>;
  dependencies?: (gauge: typeof dependencyUp) => Promise<void>;
  taskCalls?: (gauge: typeof taskCallsRunning) => void;
}
const scrapeSources: ScrapeSources = {};

/** One read of the queues per scrape: prom-client collects every metric at once, so both gauges share it. */
let queueRead: Promise<void> | undefined;
function readQueues(): Promise<void> {
  return (queueRead ??= (async () => {
    try {
      await scrapeSources.queues?.(jobQueueDepth, jobQueueLag);
    } finally {
      queueRead = undefined;
    }
  })());
}

export function setScrapeSources(sources: ScrapeSources): () => void {
  Object.assign(scrapeSources, sources);
  return () => {
    for (const k of Object.keys(sources) as (keyof ScrapeSources)[]) if (scrapeSources[k] === sources[k]) delete scrapeSources[k];
  };
}

const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'];

/** "1xx".."5xx" of an HTTP status (the same five strings every time: no new label string per update). */
export function statusClass(status: number): string {
  return status >= 100 && status < 600 ? STATUS_CLASSES[Math.floor(status / 100) - 1]! : 'other';
}

/**
 * The opt-in tenant label (metrics.tenant_label): the first `max` tenants seen keep their id,
 * later ones count as "_other", so the series stay bounded. Undefined: no tenant label.
 */
let tenantCap: { max: number; seen: Set<string> } | undefined;

export function setTenantLabel(max: number | undefined): void {
  tenantCap = max === undefined ? undefined : { max, seen: new Set() };
}

/** One answered request: what the access line says, as metrics. */
export function observeRequest(route: string, method: string, status: number, code: number | undefined, seconds: number, tenantId: string | undefined): void {
  const cls = statusClass(status);
  httpRequests.inc({ route, method, status_class: cls, code: code === undefined ? '' : String(code) });
  httpDuration.observe({ route, method, status_class: cls }, seconds);
  if (tenantCap && tenantId) {
    let tenant = tenantId;
    if (!tenantCap.seen.has(tenantId)) {
      if (tenantCap.seen.size >= tenantCap.max) tenant = '_other';
      else tenantCap.seen.add(tenantId);
    }
    tenantRequests.inc({ tenant, status_class: cls });
  }
}

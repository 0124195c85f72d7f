// Every store port in one list: what a store adapter implements (engine/store/memory and
// engine/store/redis today; a new one is a folder beside them, its job scheduler included) and
// what engine/stores.ts hands the services. Each interface lives with the service it serves
// (that folder's store.ts, or the port's own file); this file only names them, with a line
// on what each holds.
import type { WalletStore } from '../billing/store.ts';
import type { IdempotencyStore } from '../idempotency/store.ts';
import type { JobScheduler } from '../jobs/scheduler.ts';
import type { LimitsStore, RateCounters } from '../limits/store.ts';
import type { SharedMediaStore } from '../media/shared.ts';
import type { TaskStore } from '../tasks/store.ts';
import type { SessionStore, TenantStore } from '../tenants/store.ts';
import type { ResultBackend } from '../results/store.ts';
import type { BreakerStore } from '../upstream/breaker-store.ts';
import type { WebhookStore } from '../webhooks/store.ts';

export type { BreakerStore, IdempotencyStore, JobScheduler, LimitsStore, RateCounters, SessionStore, SharedMediaStore, TaskStore, TenantStore, WalletStore, WebhookStore };
/** The result store's backend (engine/store/files, engine/store/s3), chosen apart from the stores below (results.store). */
export type { ResultBackend };

/** One adapter's stores: tasks, tenants, sessions, wallets, limits, idempotency, webhooks, media, rate counters, breakers, jobs. */
export interface Stores {
  tasks: TaskStore;
  tenants: TenantStore;
  /** Console sessions (engine/tenants/sessions.ts). */
  sessions: SessionStore;
  wallets: WalletStore;
  limits: LimitsStore;
  idempotency: IdempotencyStore;
  webhooks: WebhookStore;
  /** Media bytes shared across processes (redis); undefined with the memory store. */
  media?: SharedMediaStore;
  rateCounters: RateCounters;
  /** The upstream pools' circuit breakers (per process in memory, shared through Redis). */
  breakers: BreakerStore;
  scheduler: JobScheduler;
  /**
   * Readiness: what does not answer now, among `store` (a PING and a write within `timeoutMs`) and
   * `job queue` (the scheduler's connections). Empty when ready; always empty in memory.
   */
  unavailable(timeoutMs: number): Promise<string[]>;
  /** Close the scheduler first (running jobs get `graceMs`), then the connections. */
  close(graceMs?: number): Promise<void>;
}

// The idempotency port. Records are per (tenant, Idempotency-Key). Each method is ONE atomic
// operation (memory: synchronous; Redis: one Lua script on the record's key, in the tenant's
// slot). A record says durably which of three things is true of its key:
//   in progress  an owner (token) whose lease runs until `leaseUntil`, renewed while it lives,
//                and the id of the task its create makes (fixed when the key is first claimed,
//                so a retry after the owner died finds what that attempt created);
//   done         the answer to replay, until it expires;
//   (no record)  failed before any effect, or never used: the key is free.
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

export interface ClaimRequest {
  /** Of the request (tenant, method, path, canonical body): the same key with another is a conflict. */
  fingerprint: string;
  /** The claiming attempt's own token: renewals, completion and release are fenced by it. */
  token: string;
  /** The id a create under this key takes when it is claimed afresh. */
  taskId: string;
  now: number;
  /** How long the claim holds without a renewal. */
  leaseMs: number;
  /** How long an in-progress record is kept (its owner may have created something: the key stays bound). */
  ttlMs: number;
}

export type BeginResult =
  /**
   * This attempt owns the key. `taskId` is the id its create takes; `recovered`: an earlier
   * attempt owned the key and its lease ran out (its process died): a task with `taskId` may
   * exist already.
   */
  | { kind: 'proceed'; taskId: string; recovered: boolean }
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'conflict' }
  | { kind: 'in_progress' };

export interface IdempotencyStore {
  /**
   * Claim (tenant, key):
   *  - no record, or an answer expired -> a record in progress (this token, lease, taskId): 'proceed';
   *  - a record with another fingerprint -> 'conflict';
   *  - a completed record -> 'replay' with its response;
   *  - in progress, lease still running -> 'in_progress';
   *  - in progress, lease run out -> this token takes it over, the record's task id kept:
   *    'proceed', recovered.
   */
  begin(tenantId: string, key: string, claim: ClaimRequest): Promise<BeginResult>;
  /** Extend the lease of the claim `token` to `now + leaseMs`. False if the claim is no longer ours. */
  renew(tenantId: string, key: string, token: string, now: number, leaseMs: number): Promise<boolean>;
  /** The claim `token`'s create will take `taskId` instead (the earlier one was undone). False if not ours. */
  relink(tenantId: string, key: string, token: string, taskId: string): Promise<boolean>;
  /** Store the answer of the claim `token` until `expiresAt`. False if the claim is no longer ours. */
  complete(tenantId: string, key: string, token: string, response: StoredResponse, expiresAt: number): Promise<boolean>;
  /** Drop the claim `token` (the request failed before any effect: the key is free again). */
  abandon(tenantId: string, key: string, token: string): Promise<boolean>;
}

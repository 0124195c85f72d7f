// The idempotency port. Records are per (tenant, Idempotency-Key). Each method is ONE atomic
// operation (memory: synchronous; Redis: one Lua script on the record's key, with the record's
// TTL set to its expiry).
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

export type BeginResult =
  | { kind: 'proceed' }
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'conflict' }
  | { kind: 'in_progress' };

export interface IdempotencyStore {
  /**
   * Claim (tenant, key) for `fingerprint`:
   *  - no live record (none, expired answer, or an in-progress claim whose lock ran out)
   *      -> store {in progress, fingerprint, token, lockedUntil: now + lockMs}, 'proceed';
   *  - a record with another fingerprint -> 'conflict';
   *  - a completed record -> 'replay' with its response;
   *  - an in-progress record (lock still valid) -> 'in_progress'.
   */
  begin(tenantId: string, key: string, fingerprint: string, token: string, now: number, lockMs: number): Promise<BeginResult>;
  /** Store the answer of the claim `token` until `expiresAt`. False if the claim is no longer ours. */
  complete(tenantId: string, key: string, token: string, response: StoredResponse, expiresAt: number): Promise<boolean>;
  /** Drop the claim `token` (the request failed and must be retryable with the same key). */
  abandon(tenantId: string, key: string, token: string): Promise<boolean>;
}

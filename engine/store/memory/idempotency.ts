// In-memory IdempotencyStore: each method is synchronous, hence atomic. Expired records are
// swept every SWEEP_EVERY claims. One process: a record dies with it, and so does its owner.
import type { BeginResult, ClaimRequest, IdempotencyStore, StoredResponse } from '../../idempotency/store.ts';

interface Rec {
  fingerprint: string;
  token: string;
  state: 'in_progress' | 'done';
  leaseUntil: number;
  expiresAt: number;
  taskId: string;
  response?: StoredResponse;
}

const SWEEP_EVERY = 256;

export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly recs = new Map<string, Rec>();
  private claims = 0;

  async begin(tenantId: string, key: string, c: ClaimRequest): Promise<BeginResult> {
    if (++this.claims % SWEEP_EVERY === 0) this.sweep(c.now);
    const id = recId(tenantId, key);
    const rec = this.recs.get(id);
    if (!rec || rec.expiresAt <= c.now) {
      this.recs.set(id, { fingerprint: c.fingerprint, token: c.token, state: 'in_progress', leaseUntil: c.now + c.leaseMs, expiresAt: c.now + c.ttlMs, taskId: c.taskId });
      return { kind: 'proceed', taskId: c.taskId, recovered: false };
    }
    if (rec.fingerprint !== c.fingerprint) return { kind: 'conflict' };
    if (rec.state === 'done') return { kind: 'replay', response: structuredClone(rec.response as StoredResponse) };
    if (rec.leaseUntil > c.now) return { kind: 'in_progress' };
    rec.token = c.token;
    rec.leaseUntil = c.now + c.leaseMs;
    return { kind: 'proceed', taskId: rec.taskId, recovered: true };
  }

  async renew(tenantId: string, key: string, token: string, now: number, leaseMs: number): Promise<boolean> {
    const rec = this.owned(tenantId, key, token);
    if (rec) rec.leaseUntil = now + leaseMs;
    return rec !== undefined;
  }

  async relink(tenantId: string, key: string, token: string, taskId: string): Promise<boolean> {
    const rec = this.owned(tenantId, key, token);
    if (rec) rec.taskId = taskId;
    return rec !== undefined;
  }

  async complete(tenantId: string, key: string, token: string, response: StoredResponse, expiresAt: number): Promise<boolean> {
    const rec = this.owned(tenantId, key, token);
    if (!rec) return false;
    rec.state = 'done';
    rec.response = structuredClone(response);
    rec.expiresAt = expiresAt;
    return true;
  }

  async abandon(tenantId: string, key: string, token: string): Promise<boolean> {
    if (!this.owned(tenantId, key, token)) return false;
    this.recs.delete(recId(tenantId, key));
    return true;
  }

  /** Number of records held (tests). */
  size(): number {
    return this.recs.size;
  }

  sweep(now: number): void {
    for (const [id, rec] of this.recs) if (rec.expiresAt <= now) this.recs.delete(id);
  }

  /** The record in progress claimed by `token`, if it still is. */
  private owned(tenantId: string, key: string, token: string): Rec | undefined {
    const rec = this.recs.get(recId(tenantId, key));
    return rec && rec.token === token && rec.state === 'in_progress' ? rec : undefined;
  }
}

const recId = (tenantId: string, key: string) => `${tenantId}\u0000${key}`;

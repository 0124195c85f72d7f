// In-memory IdempotencyStore: each method is synchronous, hence atomic. Expired records are
// swept every SWEEP_EVERY claims.
import type { BeginResult, IdempotencyStore, StoredResponse } from '../../idempotency/store.ts';

interface Rec {
  fingerprint: string;
  token: string;
  state: 'in_progress' | 'done';
  lockedUntil: number;
  expiresAt: number;
  response?: StoredResponse;
}

const SWEEP_EVERY = 256;

export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly recs = new Map<string, Rec>();
  private claims = 0;

  async begin(tenantId: string, key: string, fingerprint: string, token: string, now: number, lockMs: number): Promise<BeginResult> {
    if (++this.claims % SWEEP_EVERY === 0) this.sweep(now);
    const id = recId(tenantId, key);
    const rec = this.recs.get(id);
    const live = rec && (rec.state === 'done' ? rec.expiresAt > now : rec.lockedUntil > now);
    if (!rec || !live) {
      this.recs.set(id, { fingerprint, token, state: 'in_progress', lockedUntil: now + lockMs, expiresAt: now + lockMs });
      return { kind: 'proceed' };
    }
    if (rec.fingerprint !== fingerprint) return { kind: 'conflict' };
    if (rec.state === 'done') return { kind: 'replay', response: structuredClone(rec.response as StoredResponse) };
    return { kind: 'in_progress' };
  }

  async complete(tenantId: string, key: string, token: string, response: StoredResponse, expiresAt: number): Promise<boolean> {
    const rec = this.recs.get(recId(tenantId, key));
    if (!rec || rec.token !== token || rec.state !== 'in_progress') return false;
    rec.state = 'done';
    rec.response = structuredClone(response);
    rec.expiresAt = expiresAt;
    return true;
  }

  async abandon(tenantId: string, key: string, token: string): Promise<boolean> {
    const id = recId(tenantId, key);
    const rec = this.recs.get(id);
    if (!rec || rec.token !== token || rec.state !== 'in_progress') return false;
    this.recs.delete(id);
    return true;
  }

  /** Number of records held (tests). */
  size(): number {
    return this.recs.size;
  }

  sweep(now: number): void {
    for (const [id, rec] of this.recs) {
      if ((rec.state === 'done' ? rec.expiresAt : rec.lockedUntil) <= now) this.recs.delete(id);
    }
  }
}

const recId = (tenantId: string, key: string) => `${tenantId}\u0000${key}`;

// Memory adapter of the pool breakers (engine/upstream/breaker-store.ts): per process.
import { CLOSED, type BreakerRecord, type BreakerStore } from '../../upstream/breaker-store.ts';

export class MemoryBreakerStore implements BreakerStore {
  private readonly records = new Map<string, BreakerRecord>();

  async read(vendor: string, member: string): Promise<BreakerRecord> {
    return { ...(this.records.get(`${vendor}/${member}`) ?? CLOSED) };
  }

  async failure(vendor: string, member: string, threshold: number, now: number, cooldownMs: number): Promise<BreakerRecord> {
    const key = `${vendor}/${member}`;
    const r = { ...(this.records.get(key) ?? CLOSED) };
    r.failures++;
    if (r.failures >= threshold || r.probing || r.open_until !== 0) {
      r.open_until = now + cooldownMs;
      r.probing = false;
    }
    this.records.set(key, r);
    return { ...r };
  }

  async success(vendor: string, member: string): Promise<void> {
    this.records.delete(`${vendor}/${member}`);
  }

  async claimProbe(vendor: string, member: string, now: number, cooldownMs: number): Promise<boolean> {
    const r = this.records.get(`${vendor}/${member}`);
    if (!r || r.open_until === 0 || r.open_until > now) return false;
    r.open_until = now + cooldownMs;
    r.probing = true;
    return true;
  }
}

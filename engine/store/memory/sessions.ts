// Memory adapter of the console session store. Expired sessions are dropped when they are read
// and, so an idle gateway does not keep them, whenever a session is created.
import type { SessionRecord, SessionStore } from '../../tenants/store.ts';
import { systemClock, type Clock } from '../../util/clock.ts';

export class MemorySessionStore implements SessionStore {
  private readonly sessions = new Map<string, SessionRecord>();
  /** owner → its session hashes, oldest first (a Set keeps insertion order). */
  private readonly owners = new Map<string, Set<string>>();
  private readonly clock: Clock;

  constructor(opts: { clock?: Clock } = {}) {
    this.clock = opts.clock ?? systemClock;
  }

  async create(s: SessionRecord, maxPerOwner: number): Promise<void> {
    this.prune();
    this.sessions.set(s.hash, { ...s });
    let set = this.owners.get(s.owner);
    if (!set) this.owners.set(s.owner, (set = new Set()));
    set.add(s.hash);
    for (const h of set) {
      if (set.size <= maxPerOwner) break;
      set.delete(h);
      this.sessions.delete(h);
    }
  }

  async get(hash: string): Promise<SessionRecord | undefined> {
    const s = this.sessions.get(hash);
    if (s && s.expires_at <= this.clock.now()) {
      this.drop(s);
      return undefined;
    }
    return s && { ...s };
  }

  async touch(hash: string, seenAt: number, expiresAt: number): Promise<void> {
    const s = this.sessions.get(hash);
    if (s) this.sessions.set(hash, { ...s, seen_at: seenAt, expires_at: expiresAt });
  }

  async delete(s: Pick<SessionRecord, 'hash' | 'owner'>): Promise<void> {
    this.drop(s);
  }

  async deleteOwner(owner: string): Promise<number> {
    const set = this.owners.get(owner);
    if (!set) return 0;
    for (const h of set) this.sessions.delete(h);
    this.owners.delete(owner);
    return set.size;
  }

  private drop(s: Pick<SessionRecord, 'hash' | 'owner'>): void {
    this.sessions.delete(s.hash);
    const set = this.owners.get(s.owner);
    set?.delete(s.hash);
    if (set?.size === 0) this.owners.delete(s.owner);
  }

  private prune(): void {
    const now = this.clock.now();
    for (const s of this.sessions.values()) if (s.expires_at <= now) this.drop(s);
  }
}

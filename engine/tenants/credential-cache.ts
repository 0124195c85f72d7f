// The API key and tenant records behind a presented secret, kept in the process while the
// store's change feed vouches for them (ChangeFeed in ./store.ts): on Redis they sit in the
// directory's slot, so without this every request would read them (three commands) before its
// tenant-slot work. Any directory change empties the cache in every process within the feed's
// delivery (milliseconds); a feed that is down or silent for a second stops the cache from
// answering, and reads go to the store again. Unknown secrets are never cached (a guesser would
// fill the cache; the failed-authentication throttle answers those).
import type { ChangeFeed } from './store.ts';
import type { ApiKeyRecord, TenantRecord } from './types.ts';

/** A key with its tenant (undefined: the tenant is gone). */
export interface Credential {
  key: ApiKeyRecord;
  tenant: TenantRecord | undefined;
}

interface Entry extends Credential {
  generation: number;
  epoch: number;
}

/** Entries kept at most; past it the cache starts again (one read per key). */
const MAX_ENTRIES = 10_000;

export class CredentialCache {
  private readonly feed: ChangeFeed;
  private readonly byHash = new Map<string, Entry>();
  /** Moved by this process's own directory writes (their message may not have arrived yet). */
  private epoch = 0;

  constructor(feed: ChangeFeed) {
    this.feed = feed;
  }

  /** The credential of `hash`: cached if still vouched for, else `read` (and cached when found). */
  async get(hash: string, read: () => Promise<Credential | undefined>): Promise<Credential | undefined> {
    const feed = this.feed;
    const hit = this.byHash.get(hash);
    if (hit && feed.live && hit.generation === feed.generation && hit.epoch === this.epoch) return hit;
    // The generation before the read: a change announced while it runs makes the entry stale at once.
    const { generation, live } = feed;
    const epoch = this.epoch;
    const found = await read();
    if (!found || !live) {
      this.byHash.delete(hash);
      return found;
    }
    if (this.byHash.size >= MAX_ENTRIES) this.byHash.clear();
    this.byHash.set(hash, { ...found, generation, epoch });
    return found;
  }

  /** This process changed the directory: its next reads go to the store, as its own writes are seen at once. */
  clear(): void {
    this.epoch++;
    this.byHash.clear();
  }
}

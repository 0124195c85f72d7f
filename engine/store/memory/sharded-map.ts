// A string-keyed Map split into 64 shards by a hash of the key. A JS Map that outgrows its
// table rehashes every entry at once: at a million entries that stalls the event loop about
// 60 ms, at two million 120 ms (measured on this machine). Memory adapters keep a record per
// task and per charge for days — millions of entries under load — so they use this, whose
// rehashes are 64 times smaller.
export const SHARDS = 64;

export class ShardedMap<V> {
  private readonly shards: Map<string, V>[] = Array.from({ length: SHARDS }, () => new Map<string, V>());
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    return this.shards[hashOf(key) % SHARDS]!.get(key);
  }

  has(key: string): boolean {
    return this.shards[hashOf(key) % SHARDS]!.has(key);
  }

  set(key: string, value: V): this {
    const shard = this.shards[hashOf(key) % SHARDS]!;
    const before = shard.size;
    shard.set(key, value);
    this.count += shard.size - before;
    return this;
  }

  delete(key: string): boolean {
    if (!this.shards[hashOf(key) % SHARDS]!.delete(key)) return false;
    this.count--;
    return true;
  }
}

/**
 * FNV-1a of the key's UTF-16 code units, finished with murmur3's mix so every bit depends on
 * every character (the low bits pick a shard; OffHeapMap probes with the rest).
 */
export function hashOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

// A string-keyed map whose keys and values live off the JS heap: each set appends [key, value]
// to a JsonLog, and 64 open-addressing hash tables (typed arrays) point at the latest record of
// each key. Memory adapters keep a record per billed request for days (closed holds, spend
// refs); as heap objects (a Map entry, a key string, a record) they made every garbage
// collection slower and every old-generation cycle longer, stalling requests for tens of
// milliseconds. Here the heap holds no per-entry object at all.
// Values are copies (JSON round trip). Overwrites and deletes leave the old record's bytes in
// the log: use this for records written once or twice, and drop the whole map to free them.
// Shards keep growth cheap: a table doubles on its own, 1/64 of the entries at a time. Tables are
// made on first use and start small, so a map of a few entries costs a few hundred bytes.
import { JsonLog } from './json-log.ts';
import { hashOf, SHARDS } from './sharded-map.ts';

const EMPTY = 0;
const DELETED = -1;

interface Table {
  /** Record index + 1, EMPTY, or DELETED. */
  slots: Int32Array;
  /** The key hash of each used slot (rehashing never rereads keys). */
  hashes: Uint32Array;
  /** Live keys. */
  live: number;
  /** Slots not EMPTY (live + deleted). */
  used: number;
}

export class OffHeapMap<V> {
  private readonly log = new JsonLog<[string, V]>();
  private readonly tables: (Table | undefined)[] = new Array(SHARDS);
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    const h = hashOf(key);
    const t = this.tables[h % SHARDS];
    const slot = t ? this.find(t, h, key) : -1;
    return slot === -1 ? undefined : this.log.get(t!.slots[slot]! - 1)[1];
  }

  has(key: string): boolean {
    const h = hashOf(key);
    const t = this.tables[h % SHARDS];
    return t !== undefined && this.find(t, h, key) !== -1;
  }

  set(key: string, value: V): this {
    const h = hashOf(key);
    let t = (this.tables[h % SHARDS] ??= newTable(8));
    const record = this.log.push([key, value]) + 1;
    const slot = this.find(t, h, key);
    if (slot !== -1) {
      t.slots[slot] = record;
      return this;
    }
    if ((t.used + 1) * 2 > t.slots.length) t = this.tables[h % SHARDS] = rehash(t, t.live * 4 > t.slots.length ? t.slots.length * 2 : t.slots.length);
    insert(t, h, record);
    t.live++;
    this.count++;
    return this;
  }

  delete(key: string): boolean {
    const h = hashOf(key);
    const t = this.tables[h % SHARDS];
    const slot = t ? this.find(t, h, key) : -1;
    if (slot === -1) return false;
    t!.slots[slot] = DELETED;
    t!.live--;
    this.count--;
    return true;
  }

  /** The slot holding `key`, or -1. */
  private find(t: Table, h: number, key: string): number {
    const mask = t.slots.length - 1;
    for (let i = (h >>> 6) & mask; ; i = (i + 1) & mask) { // the bits above the shard number (SHARDS = 2^6)
      const s = t.slots[i]!;
      if (s === EMPTY) return -1;
      if (s !== DELETED && t.hashes[i] === h && this.log.get(s - 1)[0] === key) return i;
    }
  }
}

function newTable(capacity: number): Table {
  return { slots: new Int32Array(capacity), hashes: new Uint32Array(capacity), live: 0, used: 0 };
}

function insert(t: Table, h: number, record: number): void {
  const mask = t.slots.length - 1;
  let i = (h >>> 6) & mask;
  while (t.slots[i] !== EMPTY) i = (i + 1) & mask;
  t.slots[i] = record;
  t.hashes[i] = h;
  t.used++;
}

/** A fresh table of `capacity` slots with the live entries of `t` (deleted slots dropped). */
function rehash(t: Table, capacity: number): Table {
  const next = newTable(capacity);
  for (let i = 0; i < t.slots.length; i++) {
    const s = t.slots[i]!;
    if (s !== EMPTY && s !== DELETED) insert(next, t.hashes[i]!, s);
  }
  next.live = t.live;
  return next;
}

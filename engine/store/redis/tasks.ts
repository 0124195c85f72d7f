// Redis adapter of the task store. A task is read by id alone (GET /tasks/{id} does not know
// the tenant), so each task is ONE self-contained string key with its own hash tag,
// `<prefix>{task:<id>}`, holding the record in the field-lines codec (compact: no hash-field
// overhead). transition() is one Lua script: compare the status, apply the top-level patch.
//
// Unsettled tasks (listUnsettled, the safety sweep) are indexed in one sorted set,
// `<prefix>tasks:unsettled`, scored by creation (wall-clock µs + a per-process counter). The
// index lives in another slot than the tasks, so it is kept as a SUPERSET and checked on read:
//   create:     ZADD NX the id first, then SET NX the task (a crash in between leaves an orphan
//               entry, removed by listUnsettled once older than ORPHAN_GRACE_MS);
//   transition: the script settles the task, then the id is ZREMed when the task is finalized,
//               batched with the others finalized in the same tick (a crash in between leaves an
//               entry that listUnsettled filters out and removes);
//   discard:    the script deletes an active task (a refused create), then the id is ZREMed.
// Finished tasks are kept (no TTL) unless `finishedTtlMs` is given: then the transition that
// leaves a task terminal and finalized also sets that TTL on it.
//
// Each tenant's tasks are indexed for the console's listing in `<prefix>{t:<tenant>}:tasks`, a
// sorted set scored like the unsettled index (creation µs + counter). It is another superset:
//   create:  ZADD NX, and on one create in TRIM_EVERY ADD_TO_TENANT (the same, plus a trim of
//            entries older than the retention plus TENANT_INDEX_MARGIN_MS, so the set of a tenant
//            that never lists stays bounded), sent with the unsettled ZADD, before the task
//            (cluster) or in the same round trip;
//   discard: the id is ZREMed with the unsettled entry;
//   expiry:  the task key's TTL removes the task only; listByTenant drops entries whose task is
//            gone once older than ORPHAN_GRACE_MS (the trim at create catches the rest).
import { TaskExistsError, type TaskStore, type TenantTaskBatch, type TenantTaskStep } from '../../tasks/store.ts';
import { type TaskRecord } from '../../tasks/task.ts';
import { TASK_STATUSES, TERMINAL, type TaskStatus } from '../../vocabulary/task-status.ts';
import { decodeRecord, encodePatch, encodeRecord, jsonValue } from './codec.ts';
import { Keys, type RedisStoreOptions } from './keys.ts';
import { lua } from './script.ts';

export interface RedisTaskStoreOptions extends RedisStoreOptions {
  /** Retention of finished (terminal and finalized) tasks in ms; default: kept forever. */
  finishedTtlMs?: number;
  /**
   * How long past the retention a tenant-index entry is kept: the longest a task may run before
   * it is finished (its route's max execution, plus the sweep's slack). Default 7 days.
   */
  indexMarginMs?: number;
}

const ORPHAN_GRACE_MS = 60_000;
/** A task is created, runs (hours at most), then is kept for the retention: its entry outlives neither (the most it is kept past the retention). */
const TENANT_INDEX_MARGIN_MS = 7 * 24 * 3_600_000;
/** One create in this many trims its tenant's index. */
const TRIM_EVERY = 64;

// KEYS: tenant index. ARGV: score, id, trim-before score (0: keep all). Returns 1 when added.
const ADD_TO_TENANT = lua(`
local added = redis.call('ZADD', KEYS[1], 'NX', ARGV[1], ARGV[2])
if tonumber(ARGV[3]) > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3]) end
return added
`);

// KEYS: tenant index. ARGV: after id ('' = from the newest), min score ('' = none), max score
// exclusive ('' = none), count. Returns {end (0/1), id, score, id, score...} newest first, or
// false when the after id is not in the index. Ranks, not scores, carry the cursor: equal
// scores (two processes in one µs) neither repeat nor skip an entry.
const TENANT_PAGE = lua(`
local start = 0
if ARGV[3] ~= '' then start = redis.call('ZCOUNT', KEYS[1], ARGV[3], '+inf') end
if ARGV[1] ~= '' then
  local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
  if not r then return false end
  if r + 1 > start then start = r + 1 end
end
local n = tonumber(ARGV[4])
local rows = redis.call('ZREVRANGE', KEYS[1], start, start + n - 1, 'WITHSCORES')
local out = { #rows < 2 * n and 1 or 0 }
for i = 1, #rows, 2 do
  if ARGV[2] ~= '' and tonumber(rows[i + 1]) < tonumber(ARGV[2]) then out[1] = 1 break end
  out[#out + 1] = rows[i]
  out[#out + 1] = rows[i + 1]
end
return out
`, { readOnly: true });

const TERMINAL_JSON = [...TERMINAL].map((s) => `[${JSON.stringify(jsonValue(s))}]=true`).join(', ');

// KEYS: task. ARGV: patch, finishedTtlMs (0 = none), '1' to return the record ('0': 1), from
// status 1..n (JSON text). Returns the new record (or 1), or false when missing or in another status.
const TRANSITION = lua(`
local terminal = { ${TERMINAL_JSON} }
local s = redis.call('GET', KEYS[1])
if not s then return false end
local r, order = rec_decode(s)
local ok = false
for i = 4, #ARGV do if r.status == ARGV[i] then ok = true break end end
if not ok then return false end
rec_patch(r, order, ARGV[1])
local out = rec_encode(r, order)
local ttl = tonumber(ARGV[2])
if ttl > 0 and terminal[r.status] and r.finalized ~= 'false' then
  redis.call('SET', KEYS[1], out, 'PX', ttl)
else
  redis.call('SET', KEYS[1], out, 'KEEPTTL')
end
if ARGV[3] == '1' then return out end
return 1
`);

/** Each status as the codec stores it (the transitions' compare values). */
const STATUS_JSON = new Map(TASK_STATUSES.map((s) => [s, jsonValue(s)]));

// KEYS: task. Deletes the task unless it is terminal. Returns its tenant id (JSON) when deleted,
// 0 missing, -1 terminal (kept).
const DISCARD = lua(`
local terminal = { ${TERMINAL_JSON} }
local s = redis.call('GET', KEYS[1])
if not s then return 0 end
local r = rec_decode(s)
if terminal[r.status] then return -1 end
redis.call('DEL', KEYS[1])
return r.tenant_id
`);

export class RedisTaskStore implements TaskStore {
  private readonly client: RedisStoreOptions['client'];
  private readonly keys: Keys;
  private readonly finishedTtlMs: number;
  private readonly indexMarginMs: number;
  private seq = 0;
  private finalized: string[] = [];

  constructor(opts: RedisTaskStoreOptions) {
    this.client = opts.client;
    this.keys = new Keys(opts.prefix);
    this.finishedTtlMs = opts.finishedTtlMs ?? 0;
    this.indexMarginMs = Math.min(opts.indexMarginMs ?? TENANT_INDEX_MARGIN_MS, TENANT_INDEX_MARGIN_MS);
    if (!Number.isSafeInteger(this.finishedTtlMs) || this.finishedTtlMs < 0) throw new Error('finishedTtlMs must be a non-negative integer');
  }

  async create(task: TaskRecord): Promise<void> {
    const index = this.index();
    const score = this.score();
    const tenantIndex = this.tenantIndex(task.tenant_id);
    const trimBefore = this.finishedTtlMs > 0 ? score - (this.finishedTtlMs + this.indexMarginMs) * 1000 : 0;
    const zadd = () => this.client.zadd(index, 'NX', score, task.id);
    // The trim rides on one create in TRIM_EVERY (a script, three commands); the others add with
    // one ZADD: a tenant's set stays bounded all the same, by at most TRIM_EVERY entries more.
    const tadd = () => (trimBefore > 0 && this.seq % TRIM_EVERY === 0
      ? ADD_TO_TENANT.run(this.client, [tenantIndex], [tenantScore(task, score), task.id, trimBefore])
      : this.client.zadd(tenantIndex, 'NX', tenantScore(task, score), task.id));
    const set = () => this.client.set(this.keys.task(task.id), encodeRecord(task), 'NX');
    // One connection runs its commands in order, so on one Redis the ZADDs land first within one
    // round trip. A cluster keeps the indexes and the task on different nodes, over different
    // connections: there the indexes are written first, and the task only once that succeeded.
    let indexed: number, tenantIndexed: unknown, ok: string | null;
    if (this.client.isCluster) {
      [indexed, tenantIndexed] = await Promise.all([zadd(), tadd()]);
      ok = await set();
    } else {
      [indexed, tenantIndexed, ok] = await Promise.all([zadd(), tadd(), set()]);
    }
    if (ok === 'OK') return;
    if (indexed === 1) await this.client.zrem(index, task.id);
    if (tenantIndexed === 1) await this.client.zrem(tenantIndex, task.id);
    throw new TaskExistsError(task.id);
  }

  async get(id: string): Promise<TaskRecord | undefined> {
    const s = await this.client.get(this.keys.task(id));
    return s === null ? undefined : decodeRecord<TaskRecord>(s);
  }

  async transition(id: string, from: readonly TaskStatus[], patch: Partial<TaskRecord>): Promise<TaskRecord | undefined> {
    const s = await this.apply(id, from, patch, '1');
    return typeof s === 'string' ? decodeRecord<TaskRecord>(s) : undefined;
  }

  async update(id: string, from: readonly TaskStatus[], patch: Partial<TaskRecord>): Promise<boolean> {
    return (await this.apply(id, from, patch, '0')) === 1;
  }

  /** The TRANSITION script: the new record (`record` '1'), 1 ('0'), or null when not applied. */
  private async apply(id: string, from: readonly TaskStatus[], patch: Partial<TaskRecord>, record: '0' | '1'): Promise<unknown> {
    if (from.length === 0) return null;
    const args: (string | number)[] = [encodePatch(patch), this.finishedTtlMs, record];
    for (const status of from) args.push(STATUS_JSON.get(status)!);
    const reply = await TRANSITION.run(this.client, [this.keys.task(id)], args);
    // A task is finalized by the patch that sets `finalized`: then it leaves the unsettled index.
    if (reply !== null && patch.finalized === true) this.unindex(id);
    return reply;
  }

  async discard(id: string): Promise<boolean> {
    const r = await DISCARD.run(this.client, [this.keys.task(id)], []);
    // The index (another slot) keeps a terminal task until it is finalized; else the entry goes.
    const tenantId = typeof r === 'string' ? (JSON.parse(r) as string) : undefined;
    if (r !== -1) await Promise.all([this.client.zrem(this.index(), id), tenantId !== undefined && this.client.zrem(this.tenantIndex(tenantId), id)]);
    return tenantId !== undefined;
  }

  async listByTenant(tenantId: string, q: TenantTaskStep): Promise<TenantTaskBatch | undefined> {
    const key = this.tenantIndex(tenantId);
    const page = (await TENANT_PAGE.run(this.client, [key], [q.after ?? '', q.from === undefined ? '' : q.from * 1000, q.to === undefined ? '' : q.to * 1000, q.count])) as (string | number)[] | null;
    if (!page) return undefined;
    const ids: string[] = [];
    const scores: number[] = [];
    for (let i = 1; i < page.length; i += 2) {
      ids.push(String(page[i]));
      scores.push(Number(page[i + 1]));
    }
    const recs = await Promise.all(ids.map((id) => this.client.get(this.keys.task(id))));
    const tasks: TaskRecord[] = [];
    const stale: string[] = [];
    const orphanBefore = (Date.now() - ORPHAN_GRACE_MS) * 1000;
    recs.forEach((s, i) => {
      if (s !== null) tasks.push(decodeRecord<TaskRecord>(s));
      // The last entry is the next step's cursor: it stays until a later step reads past it.
      else if (scores[i]! < orphanBefore && i < ids.length - 1) stale.push(ids[i]!);
    });
    if (stale.length > 0) await this.client.zrem(key, ...stale);
    return { tasks, last: ids.at(-1), end: page[0] === 1 };
  }

  async listUnsettled(limit: number, afterId?: string): Promise<TaskRecord[]> {
    const out: TaskRecord[] = [];
    const index = this.index();
    const batch = Math.max(limit, 16);
    const from = afterId === undefined ? null : await this.client.zscore(index, afterId);
    let after = from === null ? '-inf' : `(${from}`;
    while (out.length < limit) {
      const rows = await this.client.zrangebyscore(index, after, '+inf', 'WITHSCORES', 'LIMIT', 0, batch);
      if (rows.length === 0) break;
      const ids: string[] = [];
      const scores: number[] = [];
      for (let i = 0; i < rows.length; i += 2) {
        ids.push(rows[i]!);
        scores.push(Number(rows[i + 1]));
      }
      const recs = await Promise.all(ids.map((id) => this.client.get(this.keys.task(id))));
      const stale: string[] = [];
      const orphanBefore = (Date.now() - ORPHAN_GRACE_MS) * 1000;
      recs.forEach((s, i) => {
        if (s === null) {
          if (scores[i]! < orphanBefore) stale.push(ids[i]!);
          return;
        }
        const task = decodeRecord<TaskRecord>(s);
        if (task.finalized === true) stale.push(ids[i]!);
        else if (out.length < limit) out.push(task);
      });
      if (stale.length > 0) await this.client.zrem(index, ...stale);
      if (rows.length < batch * 2) break;
      after = `(${scores[scores.length - 1]}`;
    }
    return out;
  }

  /**
   * A finalized task leaves the unsettled index in a batch: one ZREM per tick for every task
   * finalized in it. The index is a superset, so a removal lost (a crash, Redis away) only leaves
   * an entry that listUnsettled filters out and removes.
   */
  private unindex(id: string): void {
    if (this.finalized.length === 0) {
      setImmediate(() => {
        const ids = this.finalized;
        this.finalized = [];
        this.client.zrem(this.index(), ...ids).catch(() => {});
      });
    }
    this.finalized.push(id);
  }

  private index(): string {
    return this.keys.unsettledTasks();
  }

  private tenantIndex(tenantId: string): string {
    return `${this.keys.tenant(tenantId)}tasks`;
  }

  /** Creation order: wall-clock µs plus a per-process counter (exact in a double until 2255). */
  private score(): number {
    this.seq = (this.seq + 1) % 1000;
    return Date.now() * 1000 + this.seq;
  }
}

/** The tenant index orders by the record's created_at (what the time filters compare), same counter. */
function tenantScore(task: TaskRecord, score: number): number {
  const at = Date.parse(task.created_at);
  return Number.isFinite(at) ? at * 1000 + (score % 1000) : score;
}

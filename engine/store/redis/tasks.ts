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
//   transition: the script settles the task, then the id is ZREMed when the task is finalized
//               (a crash in between leaves an entry that listUnsettled filters out and removes);
//   discard:    the script deletes an active task (a refused create), then the id is ZREMed.
// Finished tasks are kept (no TTL) unless `finishedTtlMs` is given: then the transition that
// leaves a task terminal and finalized also sets that TTL on it.
import type { TaskStore } from '../../tasks/store.ts';
import { TERMINAL, type TaskRecord, type TaskStatus } from '../../tasks/task.ts';
import { decodeRecord, encodePatch, encodeRecord, jsonValue } from './codec.ts';
import { Keys, type RedisStoreOptions } from './keys.ts';
import { lua } from './script.ts';

export interface RedisTaskStoreOptions extends RedisStoreOptions {
  /** Retention of finished (terminal and finalized) tasks in ms; default: kept forever. */
  finishedTtlMs?: number;
}

const ORPHAN_GRACE_MS = 60_000;

const TERMINAL_JSON = [...TERMINAL].map((s) => `[${JSON.stringify(jsonValue(s))}]=true`).join(', ');

// KEYS: task. ARGV: patch, finishedTtlMs (0 = none), from status 1..n (JSON text).
// Returns the new record, or false when missing or in another status.
const TRANSITION = lua(`
local terminal = { ${TERMINAL_JSON} }
local s = redis.call('GET', KEYS[1])
if not s then return false end
local r, order = rec_decode(s)
local ok = false
for i = 3, #ARGV do if r.status == ARGV[i] then ok = true break end end
if not ok then return false end
rec_patch(r, order, ARGV[1])
local out = rec_encode(r, order)
local ttl = tonumber(ARGV[2])
if ttl > 0 and terminal[r.status] and r.finalized ~= 'false' then
  redis.call('SET', KEYS[1], out, 'PX', ttl)
else
  redis.call('SET', KEYS[1], out, 'KEEPTTL')
end
return out
`);

// KEYS: task. Deletes the task unless it is terminal. Returns 1 deleted, 0 missing, -1 terminal (kept).
const DISCARD = lua(`
local terminal = { ${TERMINAL_JSON} }
local s = redis.call('GET', KEYS[1])
if not s then return 0 end
local r = rec_decode(s)
if terminal[r.status] then return -1 end
redis.call('DEL', KEYS[1])
return 1
`);

export class RedisTaskStore implements TaskStore {
  private readonly client: RedisStoreOptions['client'];
  private readonly keys: Keys;
  private readonly finishedTtlMs: number;
  private seq = 0;

  constructor(opts: RedisTaskStoreOptions) {
    this.client = opts.client;
    this.keys = new Keys(opts.prefix);
    this.finishedTtlMs = opts.finishedTtlMs ?? 0;
    if (!Number.isSafeInteger(this.finishedTtlMs) || this.finishedTtlMs < 0) throw new Error('finishedTtlMs must be a non-negative integer');
  }

  async create(task: TaskRecord): Promise<void> {
    const index = this.index();
    const zadd = () => this.client.zadd(index, 'NX', this.score(), task.id);
    const set = () => this.client.set(this.keys.task(task.id), encodeRecord(task), 'NX');
    // One connection runs its commands in order, so on one Redis the ZADD lands first within one
    // round trip. A cluster keeps the index and the task on different nodes, over different
    // connections: there the index is written first, and the task only once that succeeded.
    const [indexed, ok] = this.client.isCluster ? [await zadd(), await set()] : await Promise.all([zadd(), set()]);
    if (ok === 'OK') return;
    if (indexed === 1) await this.client.zrem(index, task.id);
    throw new Error(`task ${task.id} exists`);
  }

  async get(id: string): Promise<TaskRecord | undefined> {
    const s = await this.client.get(this.keys.task(id));
    return s === null ? undefined : decodeRecord<TaskRecord>(s);
  }

  async transition(id: string, from: readonly TaskStatus[], patch: Partial<TaskRecord>): Promise<TaskRecord | undefined> {
    if (from.length === 0) return undefined;
    const s = await TRANSITION.run(this.client, [this.keys.task(id)], [encodePatch(patch), this.finishedTtlMs, ...from.map(jsonValue)]);
    if (typeof s !== 'string') return undefined;
    const task = decodeRecord<TaskRecord>(s);
    if (task.finalized === true) await this.client.zrem(this.index(), id);
    return task;
  }

  async discard(id: string): Promise<boolean> {
    const r = await DISCARD.run(this.client, [this.keys.task(id)], []);
    // The index (another slot) keeps a terminal task until it is finalized; else the entry goes.
    if (r !== -1) await this.client.zrem(this.index(), id);
    return r === 1;
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

  private index(): string {
    return `${this.keys.prefix}tasks:unsettled`;
  }

  /** Creation order: wall-clock µs plus a per-process counter (exact in a double until 2255). */
  private score(): number {
    this.seq = (this.seq + 1) % 1000;
    return Date.now() * 1000 + this.seq;
  }
}

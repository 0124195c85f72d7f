// The job-scheduling port on Redis for the task timers (polls, the sweep, the results sweep):
// one sorted set of due times instead of BullMQ's eight keys and ~50 commands per job.
//
//   <p>{jobs}:due   zset, member `<queue>\n<job id>\n<payload JSON>`, score = due time (ms)
//
//   schedule  ZADD NX: a job waiting or running under the same id and payload is not added twice
//             (BullMQ's job-id rule); the schedules of one tick go out as one ZADD.
//   claim     one script (CLAIM) takes the due members of the queues this process runs and moves
//             their score to now + the lease (store.job_lock_ms): the visibility lease. While a
//             job runs its lease is renewed (one ZADD XX for all of them); a job whose process died
//             is due again when its lease runs out and is run by whichever worker claims it next.
//   done      ZREM, batched per tick; a job whose ZREM was lost (a crash, Redis away) runs once more
//             after its lease: handlers are idempotent (tasks move by compare-and-set).
//   failure   the job is due again after a back-off (500 ms doubling, 5 attempts as BullMQ had);
//             each failure is reported.
//
// A worker claims when a job it scheduled itself is due, and at least every IDLE_MS (jobs other
// processes schedule, and the jobs of a process that died, once their lease ran out, are seen
// within that), so an idle process sends 2 commands (the script and its read) every IDLE_MS. Processes of the `api` role only schedule. Everything goes over
// the request path's fail-fast connection: a schedule is refused at once (4003) while Redis is
// away, and a claim that fails is tried again on the next tick, so the workers resume on their own
// once Redis is back. One key, one slot: a Redis Cluster sees no CROSSSLOT.
import type { JobErrorReporter, JobHandler, JobScheduler, QueueStats } from '../../jobs/scheduler.ts';
import { dependencyUnavailable } from '../../errors/gateway-error.ts';
import type { RedisClient } from './keys.ts';
import { lua } from './script.ts';
import { within } from '../../util/within.ts';

/** The longest a worker sleeps between two claims: jobs another process schedules wait at most this long past their due time. */
const IDLE_MS = 3000;
/** A timer may fire a millisecond or two before the due time it was set for: jobs due this soon are claimed with the others. */
const EARLY_MS = 20;
const ATTEMPTS = 5;
const BACKOFF_MS = 500;

// KEYS: the due set. ARGV: due by, lease until, limit, the queues this process runs ('\n'-joined).
// Returns the members claimed.
const CLAIM = lua(`
local handled = {}
for q in string.gmatch(ARGV[4], '[^\\n]+') do handled[q] = true end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local out, args = {}, {}
for _, m in ipairs(due) do
  local q = string.sub(m, 1, string.find(m, '\\n', 1, true) - 1)
  if handled[q] then
    out[#out + 1] = m
    args[#args + 1] = ARGV[2]
    args[#args + 1] = m
  end
end
if #args > 0 then redis.call('ZADD', KEYS[1], 'XX', unpack(args)) end
return out
`);

// KEYS: the due set. ARGV: now. Returns {queue, due count, oldest due score, later count} per queue.
const STATS = lua(`
local by, order = {}, {}
local function at(m)
  local q = string.sub(m, 1, string.find(m, '\\n', 1, true) - 1)
  if not by[q] then by[q] = { 0, false, 0 } order[#order + 1] = q end
  return by[q]
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, 10000)
for i = 1, #due, 2 do
  local s = at(due[i])
  s[1] = s[1] + 1
  if not s[2] then s[2] = due[i + 1] end
end
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'LIMIT', 0, 10000)) do
  local s = at(m)
  s[3] = s[3] + 1
end
local out = {}
for _, q in ipairs(order) do
  out[#out + 1] = { q, by[q][1], by[q][2] or '0', by[q][3] }
end
return out
`, { readOnly: true });

export interface RedisDueJobsOptions {
  /** The request path's fail-fast connection (engine/store/redis/client.ts), owned by the caller. */
  client: RedisClient;
  /** Key prefix, e.g. `gw:`. */
  prefix: string;
  /** Run handlers in this process (worker and all roles). */
  runWorkers: boolean;
  /** The visibility lease: a claimed job whose process stopped renewing it runs again after this. */
  leaseMs: number;
  /** Jobs run at once in this process. */
  concurrency?: number;
  onError?: JobErrorReporter;
  /** The clock (tests). */
  now?: () => number;
}

interface Claimed {
  queue: string;
  id: string;
  member: string;
}

export class RedisDueJobScheduler implements JobScheduler {
  private readonly o: Required<RedisDueJobsOptions>;
  private readonly key: string;
  private readonly handlers = new Map<string, JobHandler>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly attempts = new Map<string, number>();
  private adds: { score: number; member: string; done: (err?: unknown) => void }[] = [];
  private removals: string[] = [];
  private wake: NodeJS.Timeout | undefined;
  private wakeAt = Infinity;
  /** The due times of the jobs this process scheduled (or retries), ascending: its next claims. */
  private dues: number[] = [];
  private renewal: NodeJS.Timeout | undefined;
  private claiming = false;
  /** A wake-up came while a claim was running: claim again after it. */
  private again = false;
  private closed = false;

  constructor(opts: RedisDueJobsOptions) {
    this.o = { concurrency: 64, onError: () => {}, now: Date.now, ...opts };
    this.key = `${opts.prefix}{jobs}:due`;
  }

  schedule(queue: string, jobId: string, payload: Record<string, unknown>, delayMs: number): Promise<void> {
    if (this.o.client.status !== 'ready') return Promise.reject(dependencyUnavailable('job queue'));
    const dueAt = this.o.now() + Math.max(0, Math.round(delayMs));
    const member = `${queue}\n${jobId}\n${JSON.stringify(payload)}`;
    return new Promise<void>((resolve, reject) => {
      if (this.adds.length === 0) setImmediate(() => this.flushAdds());
      this.adds.push({ score: dueAt, member, done: (err) => (err ? reject(err) : resolve()) });
    }).then(() => {
      if (this.handlers.has(queue)) this.expect(dueAt);
    });
  }

  /** The schedules of one tick as one ZADD NX. */
  private flushAdds(): void {
    const batch = this.adds;
    this.adds = [];
    const args = batch.flatMap((a) => [a.score, a.member]);
    this.o.client.zadd(this.key, 'NX', ...(args as [number, string])).then(
      () => batch.forEach((a) => a.done()),
      (err: unknown) => batch.forEach((a) => a.done(err)),
    );
  }

  handle(queue: string, handler: JobHandler): void {
    if (!this.o.runWorkers) return;
    this.handlers.set(queue, handler);
    this.wakeBy(this.o.now());
  }

  /** A job of this process's comes due at `at`: a claim then. */
  private expect(at: number): void {
    if (this.closed) return;
    let lo = 0;
    let hi = this.dues.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.dues[mid]! <= at) lo = mid + 1;
      else hi = mid;
    }
    this.dues.splice(lo, 0, at);
    this.wakeBy(at);
  }

  /** Claim no later than `at`. */
  private wakeBy(at: number): void {
    if (this.closed || this.handlers.size === 0 || at >= this.wakeAt) return;
    clearTimeout(this.wake);
    this.wakeAt = at;
    this.wake = setTimeout(() => {
      this.wakeAt = Infinity;
      void this.claim();
    }, Math.max(0, at - this.o.now()));
  }

  private async claim(): Promise<void> {
    if (this.closed) return;
    if (this.claiming) {
      this.again = true;
      return;
    }
    this.claiming = true;
    this.again = false;
    let next = this.o.now() + IDLE_MS;
    // The due times this claim covers are done with; the next one known here bounds the sleep.
    let passed = 0;
    while (passed < this.dues.length && this.dues[passed]! <= this.o.now() + EARLY_MS) passed++;
    if (passed > 0) this.dues.splice(0, passed);
    if (this.dues.length > 0) next = Math.min(next, this.dues[0]!);
    try {
      const free = this.o.concurrency - this.running.size;
      if (free <= 0) return; // a job's end claims again
      const now = this.o.now();
      const members = (await CLAIM.run(this.o.client, [this.key], [now + EARLY_MS, now + this.o.leaseMs, free, [...this.handlers.keys()].join('\n')])) as string[];
      // A job still running here whose lease another claim renewed (a renewal lost) is not run twice here.
      for (const member of members) if (!this.running.has(member)) this.start(member);
      if (members.length === free) next = this.o.now(); // more may be due: claim again at once
    } catch (err) {
      // Redis away or refusing: the next tick tries again (the jobs wait in Redis meanwhile).
      this.o.onError('jobs', 'claim', err);
    } finally {
      this.claiming = false;
      this.wakeBy(this.again ? this.o.now() : next);
    }
  }

  private start(member: string): void {
    const [queue, id, payload] = member.split('\n', 3) as [string, string, string];
    const job: Claimed = { queue, id, member };
    const run = this.run(job, payload).finally(() => {
      this.running.delete(member);
      if (this.running.size === 0) {
        clearInterval(this.renewal);
        this.renewal = undefined;
      }
      if (this.running.size === this.o.concurrency - 1) this.wakeBy(this.o.now());
    });
    this.running.set(member, run);
    if (!this.closed) this.renewal ??= setInterval(() => this.renew(), Math.max(250, Math.round(this.o.leaseMs / 3)));
  }

  private async run(job: Claimed, payload: string): Promise<void> {
    try {
      await this.handlers.get(job.queue)!(JSON.parse(payload) as Record<string, unknown>);
      this.attempts.delete(job.member);
      this.remove(job.member);
    } catch (err) {
      this.o.onError(job.queue, job.id, err);
      const n = (this.attempts.get(job.member) ?? 0) + 1;
      if (n >= ATTEMPTS || this.closed) {
        this.attempts.delete(job.member);
        // Given up (as BullMQ did after its attempts), or left, at shutdown, to its lease.
        if (!this.closed) this.remove(job.member);
        return;
      }
      this.attempts.set(job.member, n);
      const at = this.o.now() + BACKOFF_MS * 2 ** (n - 1);
      // Not written (Redis away): the lease brings it back instead.
      await this.o.client.zadd(this.key, 'XX', at, job.member).then(() => this.expect(at), () => {});
    }
  }

  /** Finished jobs leave the set, batched per tick. */
  private remove(member: string): void {
    if (this.removals.length === 0) setImmediate(() => this.flushRemovals());
    this.removals.push(member);
  }

  private flushRemovals(): Promise<unknown> {
    const batch = this.removals;
    this.removals = [];
    if (batch.length === 0) return Promise.resolve();
    // Lost (Redis away): each job runs once more after its lease, harmlessly.
    return this.o.client.zrem(this.key, ...batch).catch(() => {});
  }

  /** Every running job's lease moves on, in one command. */
  private renew(): void {
    if (this.running.size === 0 || this.closed) return;
    const until = this.o.now() + this.o.leaseMs;
    const args = [...this.running.keys()].flatMap((m) => [until, m]);
    this.o.client.zadd(this.key, 'XX', ...(args as [number, string])).catch((err: unknown) => this.o.onError('jobs', 'lease', err));
  }

  async stats(): Promise<QueueStats[]> {
    const now = this.o.now();
    const rows = (await STATS.run(this.o.client, [this.key], [now])) as [string, number, string, number][];
    return rows.map(([queue, due, oldest, later]) => ({ queue, due, delayed: later, lagSeconds: due > 0 ? Math.max(0, (now - Number(oldest)) / 1000) : 0 }));
  }

  async connected(): Promise<boolean> {
    return this.o.client.status === 'ready';
  }

  /**
   * No new claim; running jobs get `graceMs`. What is still running then keeps its lease and is
   * run again elsewhere once it runs out (the jobs are durable and idempotent).
   */
  async close(graceMs = 5000): Promise<void> {
    this.closed = true;
    clearTimeout(this.wake);
    // Jobs still running past the grace are left to their lease: nobody renews it from now on.
    clearInterval(this.renewal);
    await within(Promise.allSettled([...this.running.values()]), graceMs);
    clearInterval(this.renewal);
    await this.flushRemovals();
  }
}

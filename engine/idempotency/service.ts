// Idempotency-Key on creating requests (POST). The first successful (2xx) answer to a key is
// stored and replayed for `ttlMs` (default 24 h, counted from that answer) instead of running —
// and billing — the request again. Rules:
//  - keys are per tenant; 1 to 255 visible ASCII characters, else 2003 (400);
//  - the same key with another fingerprint (tenant + METHOD + path + canonical-JSON body,
//    SHA-256) -> 409 (code 2000, title Conflict), whether the first is done or still running;
//  - the key's record says durably which of three things is true (./store.ts): in progress (an
//    owner with a lease of `leaseMs`, default 10 s, renewed while it lives: ./lease.ts), done
//    (the answer to replay), or free (failed before any effect);
//  - concurrent duplicates: exactly one runs; the others poll the store every `pollMs` for up
//    to `waitMs` (default the lease + 2 s) and then replay its answer; still running after that
//    -> 409 "in progress" with Retry-After: 1;
//  - an owner that died: once its lease runs out the next attempt takes the key over, with the
//    task id the key was claimed with (`Claim.recovered`): the handler replays the task the dead
//    attempt created if one exists, and otherwise creates it once (engine/tasks/requests.ts);
//  - only 2xx answers are stored. A non-2xx answer or a thrown error releases the key, so the
//    client can retry with the same key (e.g. after a top-up that cures a 402): nothing was
//    created or billed when a create fails synchronously;
//  - the store away: releasing a claim is retried until the store answers (the request was
//    refused; a retry with the same key must be able to run). When the answer of a request that
//    succeeded cannot be recorded, the request is refused and, once the claim is released (the
//    answer was indeed not recorded), what it did is undone (`undo`);
//  - an owner whose claim was taken over (it outlived its lease) answers 409 with Retry-After
//    and undoes nothing: what it made carries the key's task id, which the new owner adopts;
//  - replays carry the stored status, headers and body, plus `Idempotent-Replayed: true`.
import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleepMs } from 'node:timers/promises';
import { GatewayError } from '../errors/gateway-error.ts';
import { systemClock, type Clock } from '../util/clock.ts';
import { RetryUntilDone } from '../util/retry-until-done.ts';
import { freeClaim, Lease, type Claim } from './lease.ts';
import type { IdempotencyStore, StoredResponse } from './store.ts';
import { newUuid } from '../util/ids.ts';

export const REPLAYED_HEADER = 'Idempotent-Replayed';
const KEY_RE = /^[\x20-\x7e]{1,255}$/;

export interface IdempotencyOptions {
  store: IdempotencyStore;
  clock?: Clock;
  /** How long an answer is replayed (config idempotency.ttl_seconds; default 86400). */
  ttlMs?: number;
  /** How long a claim holds without a renewal: a retry takes over a dead owner's key after it (default 10 s). */
  leaseMs?: number;
  /** How long a concurrent duplicate waits for the first answer (default leaseMs + 2 s). */
  waitMs?: number;
  pollMs?: number;
  /** Injected for tests; default a real timer. */
  sleep?: (ms: number) => Promise<void>;
  /** A claim could not be released yet (`dropped`: given up on). */
  onError?: (err: unknown, dropped: boolean) => void;
}

export interface IdempotentRequest {
  tenantId: string;
  /** The Idempotency-Key header; undefined = no idempotency, the handler just runs. */
  key: string | undefined;
  method: string;
  path: string;
  body: unknown;
}

export interface IdempotentResult {
  response: StoredResponse;
  replayed: boolean;
}

export class IdempotencyService {
  readonly ttlMs: number;
  private readonly store: IdempotencyStore;
  private readonly clock: Clock;
  private readonly leaseMs: number;
  private readonly waitMs: number;
  private readonly pollMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly releases: RetryUntilDone;

  constructor(opts: IdempotencyOptions) {
    this.store = opts.store;
    this.clock = opts.clock ?? systemClock;
    this.ttlMs = opts.ttlMs ?? 86_400_000;
    this.leaseMs = opts.leaseMs ?? 10_000;
    this.waitMs = opts.waitMs ?? this.leaseMs + 2_000;
    this.pollMs = opts.pollMs ?? 50;
    this.sleep = opts.sleep ?? ((ms) => sleepMs(ms).then(() => undefined));
    const onError = opts.onError ?? (() => {});
    this.releases = new RetryUntilDone({ onError: (err, _key, dropped) => onError(err, dropped) });
  }

  /**
   * Run `handler` at most once per (tenant, key); duplicates get the first answer. The handler
   * gets the claim (the task id to create, and whether an earlier attempt died holding the key).
   * `undo` undoes what a successful handler did when its answer could not be recorded.
   */
  async run(req: IdempotentRequest, handler: (claim: Claim) => Promise<StoredResponse>, undo?: () => void): Promise<IdempotentResult> {
    if (req.key === undefined) return { response: await handler(freeClaim(newUuid())), replayed: false };
    validateKey(req.key);
    const fp = fingerprint(req);
    const token = randomUUID();
    const polls = Math.ceil(this.waitMs / this.pollMs);
    for (let attempt = 0; ; attempt++) {
      const now = this.clock.now();
      const r = await this.store.begin(req.tenantId, req.key, { fingerprint: fp, token, taskId: newUuid(), now, leaseMs: this.leaseMs, ttlMs: this.ttlMs });
      switch (r.kind) {
        case 'proceed':
          return { response: await this.execute(req.tenantId, req.key, token, new Lease({ store: this.store, tenantId: req.tenantId, key: req.key, token, clock: this.clock, leaseMs: this.leaseMs }, r, now), handler, undo), replayed: false };
        case 'replay':
          return { response: { ...r.response, headers: { ...r.response.headers, [REPLAYED_HEADER]: 'true' } }, replayed: true };
        case 'conflict':
          throw conflict('This Idempotency-Key was already used with a different request.');
        case 'in_progress':
          if (attempt >= polls) {
            throw conflict('A request with this Idempotency-Key is still being processed; retry later.', { 'Retry-After': '1' });
          }
          await this.sleep(this.pollMs);
      }
    }
  }

  private async execute(tenantId: string, key: string, token: string, lease: Lease, handler: (claim: Claim) => Promise<StoredResponse>, undo?: () => void): Promise<StoredResponse> {
    let response: StoredResponse;
    try {
      response = await handler(lease);
    } catch (err) {
      lease.stop();
      this.release(tenantId, key, token);
      throw err;
    }
    lease.stop();
    if (response.status < 200 || response.status > 299) {
      this.release(tenantId, key, token);
      return response;
    }
    let recorded: boolean;
    try {
      recorded = await this.store.complete(tenantId, key, token, response, this.clock.now() + this.ttlMs);
    } catch (err) {
      // Recorded or not (a reply lost with the store)? If the claim is still ours to release, it
      // was not: the request is refused, and what it did is undone. If it was, a retry replays it.
      this.release(tenantId, key, token, undo);
      throw err;
    }
    // Taken over by a retry after this attempt outlived its lease: the retry adopts what this one
    // created (the same task id) and records the answer; this one is not the answer of record.
    if (!recorded) throw conflict('This request lost its Idempotency-Key to a retry of it; retry to get that answer.', { 'Retry-After': '1' });
    return response;
  }

  /** Drop the claim (now, or once the store answers); `then` runs if the claim was still ours. */
  private release(tenantId: string, key: string, token: string, then?: () => void): void {
    this.releases.add(token, async () => {
      if ((await this.store.abandon(tenantId, key, token)) && then) then();
    });
  }
}

export function validateKey(key: string): void {
  if (!KEY_RE.test(key)) {
    throw new GatewayError('invalidParameterValue', 'Idempotency-Key must be 1 to 255 visible ASCII characters.', {
      errors: [{ pointer: '/headers/Idempotency-Key', detail: 'must be 1 to 255 visible ASCII characters' }],
    });
  }
}

/** SHA-256 over tenant, METHOD, path and the canonical JSON of the body (object keys sorted). */
export function fingerprint(req: Pick<IdempotentRequest, 'tenantId' | 'method' | 'path' | 'body'>): string {
  return createHash('sha256')
    .update(JSON.stringify([req.tenantId, req.method.toUpperCase(), req.path, canonical(req.body)]))
    .digest('hex');
}

/** A JSON value with every object's keys sorted (undefined members dropped, as JSON does). */
export function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map((x) => (x === undefined ? null : canonical(x)));
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== undefined) out[k] = canonical(x);
    }
    return out;
  }
  return v === undefined ? null : v;
}

function conflict(detail: string, headers?: Record<string, string>): GatewayError {
  return new GatewayError('conflict', detail, headers ? { headers } : {});
}

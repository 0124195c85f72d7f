// The catalogue's end-to-end harness: one catalogue descriptor served alone (vendors.enabled
// lists only it, upstreams.<vendor> is the only upstream configured, sandbox off) in front of a
// real HTTP server that plays that provider as its public documentation describes it (the
// fakes beside this file, written from the docs, not from the descriptor's fixtures). The tests
// run a task to each documented end and read the ledger after it: a hold, then exactly one
// settle (completed) or one release (failed, cancelled).
import { expect } from 'chai';
import type { ServerResponse } from 'node:http';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway, waitForTask, type CallResult } from '../helpers/gateway.ts';
import { waitFor } from '../webhooks/support/harness.ts';
import { FakeUpstream, json, type Seen } from '../helpers/upstream.ts';

export { call, waitFor };

/** What the fake was asked, for assertions on paths, methods, query, headers and bodies. */
export type Request = Seen;

export type Reply = { status: number; body?: unknown };

/** How a scripted task ends, chosen by a marker in its prompt: FAIL, HOLD (until cancelled), else success. */
export type Phase = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export interface FakeTask {
  id: string;
  prompt: string;
  input: any;
  polls: number;
  phase: Phase;
  /** A provider-specific end forced by a test (aborted, filtered, ...). */
  end?: string;
  callbackUrl?: string;
}

/**
 * A provider played over HTTP: subclasses route requests (method + path) to handlers written
 * from the provider's documentation, and keep their tasks here. A task is queued on its first
 * poll, running on the second, then ends (FAIL in the prompt: failed; HOLD: running until
 * cancelled; else succeeded).
 */
export abstract class ProviderFake {
  private readonly up = new FakeUpstream();
  /** Every request, in order. */
  get requests(): Request[] {
    return this.up.seen;
  }
  readonly tasks = new Map<string, FakeTask>();
  /** Where the gateway really listens, for pushes to a callback URL built on server.public_base_url. */
  gatewayUrl = '';
  private seq = 0;

  protected abstract handle(req: Request): Reply | Promise<Reply>;

  /** A fake that answers other than JSON (a stream) does it here and says true. */
  protected respond(_req: Request, _res: ServerResponse): boolean {
    return false;
  }

  newTask(prompt: string, input: unknown, callbackUrl?: string): FakeTask {
    const t: FakeTask = { id: this.idFor(++this.seq), prompt, input, polls: 0, phase: 'queued', callbackUrl };
    this.tasks.set(t.id, t);
    return t;
  }

  protected idFor(n: number): string {
    return `task${n}x${Math.random().toString(36).slice(2, 10)}`;
  }

  /** One poll's worth of progress. */
  advance(t: FakeTask): FakeTask {
    t.polls++;
    if (t.phase === 'cancelled' || t.phase === 'succeeded' || t.phase === 'failed') return t;
    if (t.polls === 1) t.phase = 'queued';
    else if (t.polls === 2 || t.prompt.includes('HOLD')) t.phase = 'running';
    else t.phase = t.prompt.includes('FAIL') || t.end ? 'failed' : 'succeeded';
    return t;
  }

  /** Pushes `body` to the task's callback URL, sent to the gateway's real address. */
  async push(t: FakeTask, body: unknown): Promise<number> {
    const u = new URL(t.callbackUrl!);
    const res = await fetch(`${this.gatewayUrl}${u.pathname}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await res.arrayBuffer();
    return res.status;
  }

  seen(method: string, path: string | RegExp): Request[] {
    return this.requests.filter((r) => r.method === method && (typeof path === 'string' ? r.path === path : path.test(r.path)));
  }

  get url(): string {
    return this.up.url;
  }

  async start(): Promise<this> {
    // One catch-all route per method: the subclass routes by itself, as the provider's docs list them.
    for (const method of ['GET', 'POST', 'PUT', 'DELETE']) this.up.on(method, /.*/, (req, res) => this.serve(req, res));
    await this.up.start();
    return this;
  }

  close(): Promise<void> {
    return this.up.close();
  }

  private async serve(req: Request, res: ServerResponse): Promise<void> {
    if (this.respond(req, res)) return;
    const reply = await this.handle(req);
    if (reply.body === undefined) res.writeHead(reply.status).end();
    else json(res, reply.status, reply.body);
  }
}

export const notFound: Reply = { status: 404, body: { detail: 'Not found.' } };

export interface CatalogueRig {
  gw: Gateway;
  base: string;
  key: string;
  tenantId: string;
  close(): Promise<void>;
}

/** The vendor alone: enabled by name, its upstream pointed at the fake, nothing else configured. */
export async function catalogueRig(vendor: string, fake: ProviderFake, credentials: Record<string, string>, opts: { publicBaseUrl?: string } = {}): Promise<CatalogueRig> {
  const gw = await startTestGateway({
    sandbox: false,
    only: [vendor],
    scale: 0.001,
    server: opts.publicBaseUrl ? `public_base_url: "${opts.publicBaseUrl}"` : undefined,
    upstreams: { [vendor]: { base_url: fake.url, credentials, timeout_ms: 1_000_000 } },
  });
  const base = gw.url;
  fake.gatewayUrl = base;
  const { tenant, key } = await newTenant(gw);
  return { gw, base, key, tenantId: tenant.id, close: () => gw.close() };
}

/** The kinds of the ledger entries a task left, in order. */
export async function ledgerOf(rig: CatalogueRig, ref: string): Promise<{ kinds: string[]; amounts: number[] }> {
  const { entries } = await rig.gw.billing.listLedger(rig.tenantId, { limit: 200 });
  const mine = entries.filter((e) => e.ref === ref).sort((a, b) => a.seq - b.seq);
  return { kinds: mine.map((e) => e.kind), amounts: mine.map((e) => e.amount) };
}

/** Creates a task (202) and returns its id. */
export async function create(rig: CatalogueRig, path: string, body: unknown): Promise<string> {
  const r = await call(rig.base, 'POST', path, { key: rig.key, body });
  expect(r.status, r.text).to.equal(202);
  return r.body.task_info.id as string;
}

/** Runs a task to its end and returns the final GET. */
export async function runToEnd(rig: CatalogueRig, path: string, body: unknown): Promise<{ id: string; final: CallResult }> {
  const id = await create(rig, path, body);
  return { id, final: await waitForTask(rig.base, `${path}/${id}`, rig.key) };
}

/** The ledger after a completed task: one hold, then one settle of `milli`. */
export async function expectSettled(rig: CatalogueRig, id: string, milli: number): Promise<void> {
  const l = await ledgerOf(rig, id);
  expect(l.kinds).to.deep.equal(['hold', 'settle']);
  expect(l.amounts[1]).to.equal(milli);
}

/** The ledger after a failed or cancelled task: one hold, then one release of all of it. */
export async function expectReleased(rig: CatalogueRig, id: string): Promise<void> {
  const l = await ledgerOf(rig, id);
  expect(l.kinds).to.deep.equal(['hold', 'release']);
  expect(l.amounts[1]).to.equal(l.amounts[0]);
}

/** The client cancels a task the provider is still running: 200, failed 4009. */
export async function cancelRunning(rig: CatalogueRig, path: string, body: unknown, fake: ProviderFake): Promise<{ id: string; task: FakeTask; answer: CallResult }> {
  const id = await create(rig, path, body);
  await waitForTask(rig.base, `${path}/${id}`, rig.key, ['processing']);
  const task = [...fake.tasks.values()].at(-1)!;
  const answer = await call(rig.base, 'POST', `${path}/${id}/cancel`, { key: rig.key });
  return { id, task, answer };
}

export const STORE = process.env.GATEWAY_TEST_STORE === 'redis' ? 'redis' : 'memory';

/**
 * A task the provider holds until this test ends it by pushing its completed answer (`answer`)
 * to the callback URL the gateway sent (on https://gw.example.com, the rig's public_base_url);
 * the push, and a replay of it, are accepted. Returns the task's final GET.
 */
export async function completeByPush(rig: CatalogueRig, fake: ProviderFake, path: string, body: unknown, answer: (t: FakeTask) => unknown): Promise<{ id: string; task: FakeTask; final: CallResult }> {
  const id = await create(rig, path, body);
  const task = await waitFor(() => [...fake.tasks.values()].find((x) => x.callbackUrl?.includes(id)), 3000, 'the submission with its callback URL');
  expect(task.callbackUrl).to.match(new RegExp(`^https://gw\\.example\\.com/callbacks/${id}/[^/]+$`));
  task.phase = 'succeeded';
  expect(await fake.push(task, answer(task))).to.be.below(300);
  const final = await waitForTask(rig.base, `${path}/${id}`, rig.key);
  expect(await fake.push(task, answer(task)), 'a replay').to.be.below(300);
  return { id, task, final };
}

/**
 * In a describe block: a fake of the provider started before its tests, and the vendor served
 * alone in front of it (catalogueRig); both closed after. Read `fake` and `rig` inside the tests.
 */
export function withProvider<F extends ProviderFake>(vendor: string, makeFake: () => F, credentials: Record<string, string>, opts: { publicBaseUrl?: string } = {}): { fake: F; rig: CatalogueRig } {
  const ctx = {} as { fake: F; rig: CatalogueRig };
  before(async () => {
    ctx.fake = await makeFake().start();
    ctx.rig = await catalogueRig(vendor, ctx.fake, credentials, opts);
  });
  after(async () => {
    await ctx.rig?.close();
    await ctx.fake?.close();
  });
  return ctx;
}

// The sandbox: a real HTTP server that plays every vendor's upstream by replaying that
// vendor's fixtures, so a new user sees tasks go pending → processing → completed with no
// provider account. Outcomes are steered, like a payment sandbox's test cards, by magic text
// in the prompt:
//   [sandbox:fail]         the task fails (the vendor's `failed` fixture) → 3005
//   [sandbox:hang]         the task never finishes → the safety net fails it with 4008
//   [sandbox:slow]         the task takes ten times longer
//   [sandbox:reject]       the upstream refuses the submission with HTTP 400 → 3002
//   [sandbox:unavailable]  the upstream answers 503 → 3001
//   [sandbox:garbage]      polls get a non-JSON answer → 3003 after the poll error limit
//   [sandbox:member-down]  the first pool member answers 503 (the next member takes the task)
//   [sandbox:no-cancel]    the upstream refuses to cancel the task (HTTP 409); it runs on
// A route's upstream cancel request (`upstream.cancel`, which the safety net sends with a 4008
// and a client's cancellation sends with a 4009) is answered 200 for a known task; its polls
// then play the `cancelled` fixture (else `failed`).
// A route that declares a push callback (`upstream.callback`) and gets a callback URL in its
// submit body (the gateway's server.public_base_url is set) is also pushed its terminal fixture
// (succeeded, failed or cancelled) at that URL when the task finishes, besides answering polls.
// Fixture text may use {{upstream_task_id}}, {{prompt}}, {{now_ms}}, {{now_s}}, {{now_iso}} and
// {{files_url}}; the simulator serves small placeholder result files under {{files_url}}.
// A descriptor's `sandbox.reject` rules play the upstream's own validation: a matching submit
// is refused with HTTP 400 (the `rejected` fixture, with {{message}}, when the route has one).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compileExpr, type CompiledExpr } from '../util/expr.ts';
import { fillFixture, fixtureVars } from './fixtures.ts';
import type { LoadedVendor } from '../descriptors/load-descriptors.ts';
import { ChatSimulator } from './chat-simulator.ts';
import type { Clock } from '../util/clock.ts';
import { randomBase62 } from '../util/ids.ts';

export interface SandboxOptions {
  clock: Clock;
  /** Time in `queued` then `running` before the outcome, already scaled. */
  queuedMs: number;
  runningMs: number;
}

type Outcome = 'succeeded' | 'failed' | 'hang' | 'garbage' | 'cancelled';

interface SimTask {
  fixtures: ReadonlyMap<string, unknown>;
  createdAt: number;
  outcome: Outcome;
  slow: number;
  prompt: string;
  /** [sandbox:no-cancel]: plays a provider that cannot stop a task once it has started it. */
  noCancel: boolean;
  /** The callback URL the submit body carried (routes with upstream.callback). */
  callbackUrl?: string;
}

interface SimRoute {
  method: string;
  vendor: string;
  submitPath: string;
  pollPattern: RegExp;
  pollMethod: string;
  cancel?: { method: string; pattern: RegExp };
  fixtures: ReadonlyMap<string, unknown>;
  prompt: CompiledExpr;
  /** The descriptor's sandbox.reject: upstream validation played by the simulator. */
  reject: { when: CompiledExpr; message: string }[];
  /** The descriptor's upstream.callback.url_field, split at the dots. */
  callbackField?: string[];
}

const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

export class SandboxSimulator {
  private readonly routes: SimRoute[] = [];
  private readonly tasks = new Map<string, SimTask>();
  private readonly opts: SandboxOptions;
  /** Proxied routes (kind sync|stream): the OpenAI-compatible chat upstream. */
  private readonly chat: ChatSimulator;
  private server?: Server;
  private baseUrl = '';
  /** Pending callback pushes, cleared at close. */
  private readonly pushes = new Set<NodeJS.Timeout>();

  constructor(vendors: readonly LoadedVendor[], opts: SandboxOptions) {
    this.opts = opts;
    this.chat = new ChatSimulator(vendors, opts.clock);
    for (const v of vendors) {
      const prompt = compileExpr(v.descriptor.sandbox?.prompt ?? 'prompt');
      const reject = (v.descriptor.sandbox?.reject ?? []).map((r) => ({ when: compileExpr(r.when), message: r.message }));
      for (const r of v.descriptor.routes) {
        const submit = r.upstream?.submit;
        const poll = r.upstream?.poll;
        if (r.kind !== 'async' || !submit || !poll) continue;
        const cancel = r.upstream?.cancel;
        this.routes.push({
          method: submit.method ?? 'POST',
          vendor: v.descriptor.vendor,
          submitPath: `/${v.descriptor.vendor}${submit.path}`,
          pollPattern: taskPathPattern(v.descriptor.vendor, poll.path),
          pollMethod: poll.method ?? 'GET',
          cancel: cancel && { method: cancel.method ?? 'POST', pattern: taskPathPattern(v.descriptor.vendor, cancel.path) },
          fixtures: v.fixtures.get(r.id) ?? new Map(),
          prompt,
          reject,
          callbackField: r.upstream?.callback?.url_field.split('.'),
        });
      }
    }
  }

  /** Start listening on a free loopback port; returns the base URL (vendor paths go under it). */
  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => send(res, 500, { error: 'sandbox failure' }));
    });
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.baseUrl;
  }

  /** A vendor's base URL; pool member `member` (> 0) under its own prefix, so [sandbox:member-down] can tell the first member. */
  urlFor(vendor: string, member = 0): string {
    return member === 0 ? `${this.baseUrl}/${vendor}` : `${this.baseUrl}/_member/${member}/${vendor}`;
  }

  async close(): Promise<void> {
    for (const t of this.pushes) clearTimeout(t);
    this.pushes.clear();
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let path = (req.url ?? '/').split('?')[0]!;
    if (req.method === 'GET' && path.startsWith('/_files/')) return sendFile(res, path);
    // Every pool member is this one simulator; only the first member plays [sandbox:member-down].
    const member = /^\/_member\/(\d+)(\/.*)$/.exec(path);
    if (member) path = member[2]!;
    const firstMember = !member;
    for (const route of this.routes) {
      if (req.method === route.method && path === route.submitPath) return this.submit(route, req, res, firstMember);
      const m = req.method === route.pollMethod ? route.pollPattern.exec(path) : null;
      if (m) return this.poll(decodeURIComponent(m[1]!), res);
      const c = route.cancel && req.method === route.cancel.method ? route.cancel.pattern.exec(path) : null;
      if (c) return this.cancel(decodeURIComponent(c[1]!), res);
    }
    if (await this.chat.handle(req, res, path, firstMember)) return;
    send(res, 404, { error: `sandbox: no upstream route ${req.method} ${path}` });
  }

  private async submit(route: SimRoute, req: IncomingMessage, res: ServerResponse, firstMember: boolean): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null');
    } catch {
      return send(res, 400, { error: 'sandbox: body is not JSON' });
    }
    const prompt = String((await route.prompt.evaluate(body).catch(() => '')) ?? '');
    for (const r of route.reject) {
      if (!(await r.when.evaluate(body).catch(() => false))) continue;
      const rejected = route.fixtures.get('rejected');
      return send(res, 400, rejected ? this.fill(rejected, '', prompt, { message: r.message }) : { code: 'InvalidParameter', message: r.message, error: { code: 'InvalidParameter', message: r.message } });
    }
    // Steering text is looked for anywhere in the upstream body, whatever the vendor's shape.
    const text = JSON.stringify(body);
    if (text.includes('[sandbox:reject]')) return send(res, 400, { code: 4, description: 'Request rejected by the sandbox ([sandbox:reject])', error: { code: 'InvalidParameter', message: 'rejected by the sandbox' } });
    if (text.includes('[sandbox:unavailable]')) return send(res, 503, { error: 'sandbox: temporarily unavailable' });
    if (firstMember && text.includes('[sandbox:member-down]')) return send(res, 503, { error: 'sandbox: this pool member is down ([sandbox:member-down])' });
    const id = `sbx${randomBase62(16)}`;
    const outcome: Outcome = text.includes('[sandbox:fail]') ? 'failed' : text.includes('[sandbox:hang]') ? 'hang' : text.includes('[sandbox:garbage]') ? 'garbage' : 'succeeded';
    const callbackUrl = route.callbackField ? valueAt(body, route.callbackField) : undefined;
    const task: SimTask = { fixtures: route.fixtures, createdAt: this.opts.clock.now(), outcome, slow: text.includes('[sandbox:slow]') ? 10 : 1, prompt, noCancel: text.includes('[sandbox:no-cancel]'), callbackUrl: typeof callbackUrl === 'string' ? callbackUrl : undefined };
    this.tasks.set(id, task);
    if (task.callbackUrl) this.schedulePush(id, task);
    const created = route.fixtures.get('created');
    if (!created) return send(res, 500, { error: `sandbox: ${route.vendor} has no "created" fixture` });
    send(res, 200, this.fill(created, id, prompt));
  }

  /** The upstream's cancel: a known task ends `cancelled`, whatever it was going to do. */
  private cancel(id: string, res: ServerResponse): void {
    const t = this.tasks.get(id);
    if (!t) return send(res, 404, { error: 'sandbox: unknown task' });
    if (t.noCancel) return send(res, 409, { error: 'sandbox: this task cannot be cancelled ([sandbox:no-cancel])' });
    t.outcome = 'cancelled';
    send(res, 200, {});
  }

  private poll(id: string, res: ServerResponse): void {
    const t = this.tasks.get(id);
    if (!t) return send(res, 404, { error: 'sandbox: unknown task' });
    if (t.outcome === 'garbage') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>502 Bad Gateway</html>');
      return;
    }
    const name = this.stateOf(t);
    const fixture = t.fixtures.get(name) ?? t.fixtures.get('running') ?? t.fixtures.get('created');
    send(res, 200, this.fill(fixture, id, t.prompt));
  }

  /** The fixture a task plays now. */
  private stateOf(t: SimTask): string {
    const elapsed = this.opts.clock.now() - t.createdAt;
    const queuedUntil = this.opts.queuedMs * t.slow;
    const runningUntil = queuedUntil + this.opts.runningMs * t.slow;
    if (t.outcome === 'cancelled') return t.fixtures.has('cancelled') ? 'cancelled' : 'failed';
    if (elapsed < queuedUntil && t.fixtures.has('queued')) return 'queued';
    if (elapsed < runningUntil || t.outcome === 'hang') return 'running';
    return t.outcome;
  }

  /** Push the terminal fixture to the task's callback URL once it has finished (a hang or garbage task is never pushed). */
  private schedulePush(id: string, t: SimTask): void {
    if (t.outcome === 'hang' || t.outcome === 'garbage') return;
    const timer = setTimeout(() => {
      this.pushes.delete(timer);
      const name = this.stateOf(t);
      const fixture = t.fixtures.get(name);
      if (!fixture || !['succeeded', 'failed', 'cancelled'].includes(name) || !t.callbackUrl) return;
      fetch(t.callbackUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(this.fill(fixture, id, t.prompt)) }).then((r) => r.body?.cancel()).catch(() => undefined);
    }, (this.opts.queuedMs + this.opts.runningMs) * t.slow + 1);
    timer.unref();
    this.pushes.add(timer);
  }

  private fill(fixture: unknown, id: string, prompt: string, extra: Record<string, string> = {}): unknown {
    return fillFixture(fixture, fixtureVars(id, prompt, this.opts.clock.now(), `${this.baseUrl}/_files`, extra));
  }
}

/** The value at a dotted path of a JSON body. */
function valueAt(body: unknown, at: readonly string[]): unknown {
  let v = body;
  for (const key of at) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined;
  return v;
}

/** A vendor's upstream path with {upstream_task_id} (poll, cancel) as a pattern capturing the id. */
function taskPathPattern(vendor: string, path: string): RegExp {
  const escaped = path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace('\\{upstream_task_id\\}', '([^/]+)').replace('{upstream_task_id}', '([^/]+)');
  return new RegExp(`^/${vendor}${escaped}$`);
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

function sendFile(res: ServerResponse, path: string): void {
  const ext = path.slice(path.lastIndexOf('.') + 1);
  const type = ({ png: 'image/png', mp4: 'video/mp4', wav: 'audio/wav', mp3: 'audio/mpeg' } as Record<string, string>)[ext] ?? 'application/octet-stream';
  const bytes = ext === 'png' ? PNG_1X1 : Buffer.from(`sandbox placeholder ${path}\n`);
  res.writeHead(200, { 'content-type': type, 'content-length': bytes.length, 'cache-control': 'public, max-age=86400' }).end(bytes);
}

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
// Fixture text may use {{upstream_task_id}}, {{prompt}}, {{now_ms}}, {{now_s}}, {{now_iso}},
// {{files_url}} and {{base_url}} (the vendor's base URL as the gateway calls it, for the URLs a
// submit answer names); the simulator serves small placeholder result files under {{files_url}}.
// A fixture may carry an HTTP status: {"$status": 202, "$body": {...}} (default 200).
// Calls about a task are routed as the gateway makes them: at submission the simulator reads
// its own answer with the route's task_id and urls mappings and builds the task's poll, result
// and cancel paths with the engine's own path builder, so a descriptor's placeholders
// ({upstream_task_id}, {upstream_task_id:path}, {url:<name>}) are played exactly.
// A route with upstream.result answers its result path with the `result` fixture once the task
// has succeeded, and before that with `not_ready` (default: HTTP 400).
// A descriptor's `sandbox.reject` rules play the upstream's own validation: a matching submit
// is refused with HTTP 400 (the `rejected` fixture, with {{message}}, when the route has one).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from '../util/node-http.ts';
import type { AddressInfo } from 'node:net';
import { compileExpr, type CompiledExpr } from '../util/expr.ts';
import { fillFixture, fixtureAnswer, fixtureVars } from './fixtures.ts';
import { buildTaskPath, pathUnderBase } from '../upstream/answer-paths.ts';
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
  /** The base URL of the pool member that took the task ({{base_url}} in its fixtures). */
  baseUrl: string;
  /** The callback URL the submit body carried (routes with upstream.callback). */
  callbackUrl?: string;
}

/** A call the gateway makes about a task: its method and path template. */
interface TaskCall {
  method: string;
  template: string;
}

interface SimRoute {
  method: string;
  vendor: string;
  submitPath: string;
  poll: TaskCall;
  result?: TaskCall;
  cancel?: TaskCall;
  taskId: CompiledExpr;
  urls: [string, CompiledExpr][];
  fixtures: ReadonlyMap<string, unknown>;
  prompt: CompiledExpr;
  /** The descriptor's sandbox.reject: upstream validation played by the simulator. */
  reject: { when: CompiledExpr; message: string }[];
  /** The descriptor's upstream.callback.url_field, split at the dots, or its url_query. */
  callbackField?: string[];
  callbackQuery?: string;
}

type CallKind = 'poll' | 'result' | 'cancel';

const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

export class SandboxSimulator {
  private readonly routes: SimRoute[] = [];
  private readonly tasks = new Map<string, SimTask>();
  /** `<method> <path>` of every call the gateway will make about a task → the task and what the call is. */
  private readonly taskCalls = new Map<string, { id: string; kind: CallKind }>();
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
        const result = r.upstream?.result;
        this.routes.push({
          method: submit.method ?? 'POST',
          vendor: v.descriptor.vendor,
          submitPath: `/${v.descriptor.vendor}${submit.path.split('?')[0]}`,
          poll: { method: poll.method ?? 'GET', template: poll.path },
          result: result && { method: result.method ?? 'GET', template: result.path },
          cancel: typeof cancel === 'object' ? { method: cancel.method ?? 'POST', template: cancel.path } : undefined,
          taskId: compileExpr(submit.task_id),
          urls: Object.entries(submit.urls ?? {}).map(([n, e]) => [n, compileExpr(e)]),
          fixtures: v.fixtures.get(r.id) ?? new Map(),
          prompt,
          reject,
          callbackField: r.upstream?.callback?.url_field?.split('.'),
          callbackQuery: r.upstream?.callback?.url_query,
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
    const known = this.taskCalls.get(`${req.method} ${path}`);
    if (known) {
      if (known.kind === 'poll') return this.poll(known.id, res);
      if (known.kind === 'result') return this.result(known.id, res);
      return this.cancel(known.id, res);
    }
    for (const route of this.routes) {
      if (req.method === route.method && path === route.submitPath) return this.submit(route, req, res, member ? Number(member[1]) : 0);
    }
    if (await this.chat.handle(req, res, path, !member)) return;
    send(res, 404, { error: `sandbox: no upstream route ${req.method} ${path}` });
  }

  private async submit(route: SimRoute, req: IncomingMessage, res: ServerResponse, memberIndex: number): Promise<void> {
    const firstMember = memberIndex === 0;
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
    const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
    const callbackUrl = route.callbackField ? valueAt(body, route.callbackField) : route.callbackQuery ? (query.get(route.callbackQuery) ?? undefined) : undefined;
    const task: SimTask = { fixtures: route.fixtures, createdAt: this.opts.clock.now(), outcome, slow: text.includes('[sandbox:slow]') ? 10 : 1, prompt, noCancel: text.includes('[sandbox:no-cancel]'), baseUrl: this.urlFor(route.vendor, memberIndex), callbackUrl: typeof callbackUrl === 'string' ? callbackUrl : undefined };
    this.tasks.set(id, task);
    if (task.callbackUrl) this.schedulePush(id, task);
    const created = route.fixtures.get('created');
    if (!created) return send(res, 500, { error: `sandbox: ${route.vendor} has no "created" fixture` });
    const answer = fixtureAnswer(this.fill(created, id, prompt, { base_url: task.baseUrl }));
    await this.routeCalls(route, id, answer.body, task.baseUrl);
    send(res, answer.status, answer.body);
  }

  /** Register the task's poll, result and cancel calls as the gateway will build them from this answer. */
  private async routeCalls(route: SimRoute, id: string, answer: unknown, baseUrl: string): Promise<void> {
    try {
      const upstreamTaskId = String(await route.taskId.evaluate(answer));
      const urls: Record<string, string> = {};
      for (const [name, expr] of route.urls) urls[name] = pathUnderBase(await expr.evaluate(answer), baseUrl);
      for (const [kind, call] of [['poll', route.poll], ['result', route.result], ['cancel', route.cancel]] as const) {
        if (call) this.taskCalls.set(`${call.method} /${route.vendor}${buildTaskPath(call.template, { upstreamTaskId, urls }).split('?')[0]}`, { id, kind });
      }
    } catch {
      // The gateway cannot build these paths either: it fails the task at submission.
    }
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
    const answer = fixtureAnswer(this.fill(fixture, id, t.prompt, { base_url: t.baseUrl }));
    send(res, answer.status, answer.body);
  }

  /** upstream.result: the `result` fixture once the task has succeeded; `not_ready` (default a 400) before. */
  private result(id: string, res: ServerResponse): void {
    const t = this.tasks.get(id)!;
    const ready = this.stateOf(t) === 'succeeded';
    const fixture = ready ? t.fixtures.get('result') : t.fixtures.get('not_ready');
    if (fixture === undefined) return send(res, ready ? 500 : 400, { error: ready ? 'sandbox: this route has no "result" fixture' : 'sandbox: the result is not ready' });
    const answer = fixtureAnswer(this.fill(fixture, id, t.prompt, { base_url: t.baseUrl }));
    send(res, answer.status, answer.body);
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
      fetch(t.callbackUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(fixtureAnswer(this.fill(fixture, id, t.prompt, { base_url: t.baseUrl })).body) }).then((r) => r.body?.cancel()).catch(() => undefined);
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

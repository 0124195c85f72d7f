// Each async route's fixtures run end to end, as the gateway and the sandbox would play them:
// create → upstream task id (and the URLs the answer names) → the poll, result and cancel paths,
// built with the engine's own path builder (engine/upstream/answer-paths.ts), which is how the
// sandbox routes them → each poll answer's status, HTTP status included → on `completed`, the
// result fetch (upstream.result) and the result fields → what pricing settles on. Where `serve`
// would fail a task, this reports an error: a path that cannot be built from the answer, a
// status that is not mapped (a non-2xx one would be a failed poll), a completed answer that
// yields no result. `gateway check` prints these (engine/tooling/checks.ts), and `serve`
// refuses to start on an enabled descriptor with such an error (engine/gateway.ts), so the two
// agree on what runs.
import { relative } from 'node:path';
import type { Problem } from '../config/yaml-source.ts';
import type { LoadedVendor } from '../descriptors/load-descriptors.ts';
import { resultFieldValue } from '../descriptors/result-fields.ts';
import type { RouteSpec } from '../descriptors/types.ts';
import type { TaskStatus } from '../vocabulary/task-status.ts';
import { buildTaskPath, pathUnderBase, placeholdersOf, readsHttpStatus, UnsafePathError } from '../upstream/answer-paths.ts';
import { compileExpr, type CompiledExpr } from '../util/expr.ts';
import { fillFixture, fixtureAnswer, fixtureVars } from './fixtures.ts';

/** A finding of the run, at a JSON pointer of the descriptor. */
export interface FixtureFinding {
  pointer: string;
  message: string;
  severity: 'error' | 'warning';
}

/** What a route's run found, and what its succeeded path yielded (for pricing checks). */
export interface RouteRun {
  findings: FixtureFinding[];
  /** The result fields of the completed task, when the run got that far. */
  result?: Record<string, unknown>;
  /** The final upstream answer ($upstream of settle_quantity). */
  final?: unknown;
}

/** Fixture names the sandbox plays as poll answers, and the task state each must map onto. */
export const POLL_FIXTURE_STATES: Readonly<Record<string, TaskStatus>> = {
  queued: 'pending',
  running: 'processing',
  succeeded: 'completed',
  failed: 'failed',
  cancelled: 'failed', // polls after the route's upstream cancel
};

/** Fixtures that are not poll answers: the submit answer, the refusal `sandbox.reject` plays, the result fetch's answers. */
export const NON_POLL_FIXTURES: ReadonlySet<string> = new Set(['created', 'rejected', 'result', 'not_ready']);

/** The base URL fixtures are filled with ({{base_url}}), as a pool member's would be. */
export const SAMPLE_BASE_URL = 'http://127.0.0.1:9/sample';

export function sampleFixtureVars(prompt = 'a sample prompt'): Record<string, string | number> {
  return fixtureVars('sbxSampleTask0001', prompt, Date.UTC(2025, 0, 1), 'http://127.0.0.1:9/_files', { base_url: SAMPLE_BASE_URL });
}

/** Run every async route of a descriptor; keyed by route index. `requests` are the validated examples (for $request). */
export async function runVendorFixtures(v: LoadedVendor, where: string, requests: ReadonlyMap<number, Record<string, unknown>> = new Map()): Promise<Map<number, RouteRun>> {
  const out = new Map<number, RouteRun>();
  for (const [i, r] of v.descriptor.routes.entries()) {
    if (r.kind !== 'async') continue;
    out.set(i, await runRouteFixtures(r, `/routes/${i}`, v.fixtures.get(r.id), `${where}/${r.id}`, requests.get(i) ?? (r.request?.examples?.[0] as Record<string, unknown> | undefined) ?? {}));
  }
  return out;
}

/**
 * A descriptor with no fixture at all: an error, whatever its routes (an async route without
 * fixtures is reported by its own run, so this speaks for descriptors of proxied routes only).
 */
export function noFixtures(v: LoadedVendor, where: string): FixtureFinding[] {
  if (v.fixtures.size > 0 || v.descriptor.routes.some((r) => r.kind === 'async')) return [];
  return [{ pointer: '/routes', message: `no fixtures in ${where}/: the sandbox cannot play this descriptor and serve refuses it`, severity: 'error' }];
}

/** The errors of the loaded (enabled) descriptors' runs, positioned in their files: what `serve` refuses to start on. */
export async function fixtureProblems(loaded: readonly LoadedVendor[]): Promise<Problem[]> {
  const out: Problem[] = [];
  for (const v of loaded) {
    const where = `${relative(process.cwd(), v.file).replace(/\.ya?ml$/, '')}/fixtures`;
    for (const f of noFixtures(v, where)) out.push(v.source.problem(f.pointer, `${f.message} [fixture]`));
    for (const run of (await runVendorFixtures(v, where)).values()) {
      for (const f of run.findings) if (f.severity === 'error') out.push(v.source.problem(f.pointer, `${f.message} [fixture]`));
    }
  }
  return out;
}

function tryCompile(source: string | undefined): CompiledExpr | undefined {
  if (source === undefined) return undefined;
  try {
    return compileExpr(source);
  } catch {
    return undefined; // reported by the expression checks
  }
}

async function tryEval(expr: CompiledExpr, input: unknown, bindings: Record<string, unknown> = {}): Promise<{ value?: unknown; error?: string }> {
  try {
    return { value: await expr.evaluate(input, bindings) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

interface Run {
  r: RouteSpec;
  p: string;
  where: string;
  fx: ReadonlyMap<string, unknown>;
  out: RouteRun;
  at(pointer: string, message: string, severity?: 'error' | 'warning'): void;
}

/** One async route's run; `request` is bound as $request in the result fields. */
export async function runRouteFixtures(r: RouteSpec, p: string, fx: ReadonlyMap<string, unknown> | undefined, where: string, request: Record<string, unknown>): Promise<RouteRun> {
  const out: RouteRun = { findings: [] };
  const at = (pointer: string, message: string, severity: 'error' | 'warning' = 'error') => out.findings.push({ pointer, message, severity });
  const up = r.upstream ?? {};
  if (!fx || fx.size === 0) {
    at(p, `no fixtures in ${where}/: the sandbox cannot play this route, its mappings are untested, and serve refuses it`);
    return out;
  }
  const run: Run = { r, p, where, fx, out, at };
  const needed: [string, 'error' | 'warning'][] = [['created', 'error'], ['succeeded', 'error'], ['failed', 'warning'], ['running', 'warning'], ...(up.result ? [['result', 'error'] as [string, 'error']] : [])];
  for (const [name, sev] of needed) {
    if (!fx.has(name)) at(p, `no ${where}/${name}.json${name === 'failed' ? ': [sandbox:fail] cannot be played' : name === 'running' ? ': polls before the outcome answer with created.json' : ''}`, sev);
  }
  if (typeof up.cancel === 'object' && !fx.has('cancelled')) at(`${p}/upstream/cancel`, `no ${where}/cancelled.json: after a cancel the sandbox plays failed.json`, 'warning');
  const refs = await readCreated(run);
  if (refs) buildPaths(run, refs);
  await readPolls(run, request);
  return out;
}

/** The submit answer: its HTTP status, task id, `accept`, and the URLs it names. */
async function readCreated(run: Run): Promise<{ upstreamTaskId: string; urls: Record<string, string> } | undefined> {
  const { r, p, where, at } = run;
  const submit = r.upstream?.submit;
  const created = run.fx.get('created');
  if (created === undefined || !submit) return undefined;
  const answer = fixtureAnswer(fillFixture(created, sampleFixtureVars()));
  if (answer.status < 200 || answer.status > 299) {
    at(`${p}/upstream/submit`, `${where}/created.json answers HTTP ${answer.status}: the gateway would refuse every submission`);
    return undefined;
  }
  const accept = tryCompile(submit.accept);
  if (accept) {
    const ok = await tryEval(accept, answer.body);
    if (ok.error || !ok.value) at(`${p}/upstream/submit/accept`, `is not true for ${where}/created.json${ok.error ? `: ${ok.error}` : ''}: the gateway would refuse every submission`);
  }
  const taskId = tryCompile(submit.task_id);
  if (!taskId) return undefined;
  const id = await tryEval(taskId, answer.body);
  if (id.error) {
    at(`${p}/upstream/submit/task_id`, `fails on ${where}/created.json: ${id.error}`);
    return undefined;
  }
  if (!((typeof id.value === 'string' && id.value !== '') || typeof id.value === 'number')) {
    at(`${p}/upstream/submit/task_id`, `reads ${describeValue(id.value)} from ${where}/created.json, not a task id`);
    return undefined;
  }
  const urls: Record<string, string> = {};
  for (const [name, source] of Object.entries(submit.urls ?? {})) {
    const expr = tryCompile(source);
    if (!expr) continue;
    const got = await tryEval(expr, answer.body);
    try {
      urls[name] = pathUnderBase(got.value, SAMPLE_BASE_URL, `the ${name} URL`);
    } catch (err) {
      if (!(err instanceof UnsafePathError)) throw err;
      at(`${p}/upstream/submit/urls/${name}`, `reads ${describeValue(got.value)} from ${where}/created.json, which the gateway refuses: ${err.message} (fixtures write the provider's URLs as {{base_url}}/...)`);
    }
  }
  return { upstreamTaskId: String(id.value), urls };
}

/** The poll, result and cancel paths, built from the created answer as the gateway builds them (and the sandbox routes them). */
function buildPaths(run: Run, refs: { upstreamTaskId: string; urls: Record<string, string> }): void {
  const up = run.r.upstream ?? {};
  const calls = [['poll', up.poll?.path], ['result', up.result?.path], ['cancel', typeof up.cancel === 'object' ? up.cancel.path : undefined]] as const;
  for (const [stage, template] of calls) {
    if (template === undefined) continue;
    const pointer = `${run.p}/upstream/${stage}/path`;
    try {
      const path = buildTaskPath(template, refs);
      if (placeholdersOf(template).includes('upstream_task_id') && refs.upstreamTaskId.includes('/')) {
        run.at(pointer, `the task id read from ${run.where}/created.json (${describeValue(refs.upstreamTaskId)}) holds "/", which {upstream_task_id} sends percent-encoded as one segment (${path}): the provider would not find the task. Write {upstream_task_id:path} to use the id as a path`);
      }
    } catch (err) {
      if (!(err instanceof UnsafePathError)) throw err;
      run.at(pointer, `cannot be built from ${run.where}/created.json: ${err.message}; the gateway would fail every task at submission`);
    }
  }
}

/** Each poll fixture: its status (HTTP status bound) mapped onto the state its name says; the completed one read to a result. */
async function readPolls(run: Run, request: Record<string, unknown>): Promise<void> {
  const { p, where, at } = run;
  const poll = run.r.upstream?.poll;
  const status = tryCompile(poll?.status);
  if (!status || !poll) return;
  for (const [name, raw] of run.fx) {
    if (NON_POLL_FIXTURES.has(name)) continue;
    const answer = fixtureAnswer(fillFixture(raw, sampleFixtureVars()));
    const got = await tryEval(status, answer.body, { http_status: answer.status });
    if (got.error) {
      at(`${p}/upstream/poll/status`, `fails on ${where}/${name}.json: ${got.error}`);
      continue;
    }
    const key = typeof got.value === 'string' || typeof got.value === 'number' ? String(got.value) : undefined;
    const state: TaskStatus | undefined = key === undefined ? undefined : poll.status_map[key];
    const ok = answer.status >= 200 && answer.status <= 299;
    if (!ok && !readsHttpStatus(poll.status)) {
      at(`${p}/upstream/poll/status`, `${where}/${name}.json answers HTTP ${answer.status}, and the status expression does not read $http_status: such a poll counts as failed (read $http_status to map it)`);
      continue;
    }
    if (!state) {
      const then = ok ? 'the gateway would fail the task with 3003' : `a poll answered HTTP ${answer.status} would count as failed`;
      at(`${p}/upstream/poll/status`, `reads ${describeValue(got.value)} from ${where}/${name}.json, which status_map does not map (it maps: ${Object.keys(poll.status_map).join(', ')}): ${then}`);
      continue;
    }
    const expected = POLL_FIXTURE_STATES[name];
    if (expected && state !== expected) at(`${p}/upstream/poll/status_map`, `${where}/${name}.json is the sandbox's ${name} answer, but its status "${key}" maps onto "${state}", not "${expected}"`);
    if (state === 'completed') await readCompleted(run, name, answer, request);
    // A cancelled task carries no upstream error: the gateway's own (4008, 4009) explains it.
    if (state === 'failed' && name !== 'cancelled') await readFailure(run, name, answer);
  }
}

/** A completed answer: the result fetch's answer (upstream.result) or this one, read to the result fields. */
async function readCompleted(run: Run, name: string, answer: { status: number; body: unknown }, request: Record<string, unknown>): Promise<void> {
  const { r, p, where, at } = run;
  let final = answer;
  let from = `${where}/${name}.json`;
  if (r.upstream?.result) {
    const fetched = run.fx.get('result');
    if (fetched === undefined) return; // reported above
    final = fixtureAnswer(fillFixture(fetched, sampleFixtureVars()));
    from = `${where}/result.json`;
    if (final.status < 200 || final.status > 299) {
      at(`${p}/upstream/result`, `${from} answers HTTP ${final.status}: a completed task would fail (the error rules map it, stage = 'result') and yield no result`);
      return;
    }
  }
  const result: Record<string, unknown> = {};
  let complete = true;
  for (const [field, spec] of Object.entries(r.result ?? {})) {
    const source = typeof spec === 'string' ? spec : spec.from;
    const optional = typeof spec === 'object' && spec.optional === true;
    const expr = tryCompile(source);
    if (!expr) continue;
    const pointer = `${p}/result/${field}${typeof spec === 'string' ? '' : '/from'}`;
    const got = await tryEval(expr, final.body, { request, http_status: final.status });
    if (got.error) {
      at(pointer, `fails on ${from}: ${got.error}`);
      complete = false;
      continue;
    }
    if (optional && (got.value === undefined || got.value === null)) continue;
    const read = resultFieldValue(field, got.value);
    if (read.ok) result[field] = read.value;
    else {
      complete = false;
      at(pointer, `reads ${describeValue(got.value)} from ${from}: the answer ${read.reason}, so the gateway would fail a completed task with 3003${optional ? '' : ' (mark a field the provider may leave out {from, optional: true})'}`);
    }
  }
  if (complete) {
    run.out.result = result;
    run.out.final = final.body;
  }
}

/** A failed answer: the error message and code the task would carry (warnings). */
async function readFailure(run: Run, name: string, answer: { status: number; body: unknown }): Promise<void> {
  const poll = run.r.upstream?.poll;
  for (const [source, field] of [[poll?.error_message, 'error_message'], [poll?.error_code, 'error_code']] as const) {
    const expr = tryCompile(source);
    if (!expr) continue;
    const got = await tryEval(expr, answer.body, { http_status: answer.status });
    if (got.error || got.value === undefined || got.value === null || got.value === '') {
      run.at(`${run.p}/upstream/poll/${field}`, `reads nothing from ${run.where}/${name}.json${got.error ? `: ${got.error}` : ''}: failed tasks would carry no upstream ${field === 'error_code' ? 'code' : 'message'}`, 'warning');
    }
  }
}

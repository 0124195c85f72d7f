// OpenTelemetry spans, made by hand where the gateway does something worth timing (no
// auto-instrumentation: require hooks do not fit this ESM, type-stripped code, and they would
// wrap every call of every module). Tracing is off unless config.tracing.enabled: then `tracing`
// stays false, every call site tests it before calling anything else here, and the SDK
// (./sdk.ts, loaded by the gateway only when tracing is on) is never imported. This file needs
// only the API package, which records nothing by itself.
//
// The span a request runs in is held in an AsyncLocalStorage (the front door enters it), so the
// services' spans (auth, validation, store) and log lines find their parent without it being
// passed down. Work that outlives the request (submit, polls, webhook attempts) is parented on
// the traceparent the task or delivery stored, so a task's whole life is one trace.
import { AsyncLocalStorage } from 'node:async_hooks';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type SpanContext, type Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';

export { SpanKind, SpanStatusCode, type Attributes, type Span };

/** True while a tracer is installed (./sdk.ts). Read it before calling anything below. */
export let tracing = false;
let tracer: Tracer | undefined;
const current = new AsyncLocalStorage<Span>();

/**
 * Make `t` the process's tracer; the returned function removes it again (if it is still the
 * one installed). One per process: the last gateway started with tracing on owns it.
 */
export function installTracer(t: Tracer): () => void {
  tracer = t;
  tracing = true;
  return () => {
    if (tracer !== t) return;
    tracer = undefined;
    tracing = false;
  };
}

/** Run `fn` (and everything it awaits or schedules) inside `span`. */
export function runInSpan<T>(span: Span, fn: () => T): T {
  return current.run(span, fn);
}

/** The span the caller runs in, if any. */
export function activeSpan(): Span | undefined {
  return current.getStore();
}

/**
 * A new span whose parent is the `traceparent` given (a caller's, or one a task stored), else
 * the span the caller runs in (not for a SERVER span), else none (a new trace). A stored traceparent naming the running
 * span is the same parent, kept local.
 */
export function startSpan(name: string, kind: SpanKind, attributes?: Attributes, parentTraceparent?: string): Span {
  const active = current.getStore();
  let parent: Context = ROOT_CONTEXT;
  const remote = parentTraceparent ? remoteSpanContext(parentTraceparent) : undefined;
  // A SERVER span's parent is its caller, never a span this process happens to run in.
  if (active && kind !== SpanKind.SERVER && (!remote || remote.spanId === active.spanContext().spanId)) parent = trace.setSpan(ROOT_CONTEXT, active);
  else if (remote) parent = trace.setSpanContext(ROOT_CONTEXT, remote);
  return tracer!.startSpan(name, { kind, attributes }, parent);
}

/**
 * A step of the running request (auth, validation, a store call): a child of the span the
 * caller runs in, ended when `run` settles; outside any span `run` runs untraced.
 */
export async function traced<T>(name: string, run: () => Promise<T>, attributes?: Attributes): Promise<T> {
  const parent = current.getStore();
  if (!parent) return run();
  const span = tracer!.startSpan(name, { kind: SpanKind.INTERNAL, attributes }, trace.setSpan(ROOT_CONTEXT, parent));
  try {
    return await run();
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Marks `span` failed by `err`; a GatewayError's (or UpstreamFailure's) code is its error.type. */
export function failSpan(span: Span, err: unknown): void {
  const e = err as { code?: unknown; message?: unknown; name?: unknown } | undefined;
  const code = e?.code;
  span.setAttribute('error.type', typeof code === 'number' || typeof code === 'string' ? String(code) : typeof e?.name === 'string' ? e.name : 'Error');
  span.setStatus({ code: SpanStatusCode.ERROR, message: typeof e?.message === 'string' ? e.message : String(err) });
}

/** The W3C traceparent naming `span` (what goes in an outgoing `traceparent` header). */
export function traceparentOf(span: Span): string {
  const sc = span.spanContext();
  return `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags & 1 ? '01' : '00'}`;
}

// The rules of engine/http/traceparent.ts's continueTrace: a version-00 header with extra
// fields, version ff, and all-zero ids are not a parent.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The span a `traceparent` header names, as a remote parent; undefined when it is not valid. */
export function remoteSpanContext(header: string): SpanContext | undefined {
  const m = TRACEPARENT.exec(header.trim().toLowerCase());
  if (!m || m[1] === 'ff' || (m[1] === '00' && m[5]) || /^0+$/.test(m[2]!) || /^0+$/.test(m[3]!)) return undefined;
  return { traceId: m[2]!, spanId: m[3]!, traceFlags: Number.parseInt(m[4]!, 16), isRemote: true };
}

/**
 * The logger a traced gateway logs through: every line written inside a span carries its
 * trace_id (unless the line names one) and span_id. Only installed when tracing is on.
 */
export function withTraceIds(logger: Logger): Logger {
  return logger.child({}, { formatters: { log: addTraceIds } });
}

function addTraceIds(line: object): object {
  const span = current.getStore();
  if (!span) return line;
  const sc = span.spanContext();
  const named = (line as { trace_id?: unknown }).trace_id;
  return { ...line, trace_id: named ?? sc.traceId, span_id: sc.spanId };
}

// Reading a provider's answers about a task the way the descriptor says: the URLs its submit
// answer names, the paths of later calls built from what it answered (engine/upstream/answer-paths.ts
// keeps them on the member's base URL), the result fields of a completed answer, and where the
// callback URL goes in the submit request. The lifecycle (lifecycle.ts) calls these.
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import { resultFieldValue } from '../descriptors/result-fields.ts';
import { buildTaskPath, pathUnderBase, UnsafePathError } from '../upstream/answer-paths.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { descriptorExpression } from './provider.ts';
import type { TaskRecord } from './task.ts';

/** The path of a task's poll, result or cancel call (template with placeholders); throws UnsafePathError. */
export function taskPath(template: string, task: Pick<TaskRecord, 'upstream_task_id' | 'upstream_urls'>): string {
  return buildTaskPath(template, { upstreamTaskId: task.upstream_task_id ?? '', urls: task.upstream_urls });
}

/**
 * The URLs the submit answer names (upstream.submit.urls), as paths under the accepting
 * member's base URL; a URL elsewhere (or none where the descriptor expects one) is a 3003, the
 * provider's answer being unusable. Undefined when the route reads none.
 */
export async function submitUrls(route: AsyncRoutePlan, body: unknown, baseUrl: string): Promise<Record<string, string> | undefined> {
  if (!route.submit.urls.length) return undefined;
  const out: Record<string, string> = {};
  for (const [name, expr] of route.submit.urls) {
    const value = await descriptorExpression(route, `submit.urls.${name}`, () => expr.evaluate(body));
    try {
      out[name] = pathUnderBase(value, baseUrl, `its ${name} URL`);
    } catch (err) {
      if (!(err instanceof UnsafePathError)) throw err;
      throw new GatewayError('upstreamResponseError', `The provider accepted the task but its answer cannot be used: ${err.message}.`);
    }
  }
  return out;
}

/** Every path later calls will use, built once at submission: a provider's unusable id or URL fails the task there, not at each poll. */
export function checkTaskPaths(route: AsyncRoutePlan, task: Pick<TaskRecord, 'upstream_task_id' | 'upstream_urls'>): void {
  const templates = [route.poll.path, route.resultFetch?.path, route.cancel?.path].filter((t): t is string => t !== undefined);
  try {
    for (const t of templates) taskPath(t, task);
  } catch (err) {
    if (!(err instanceof UnsafePathError)) throw err;
    throw new GatewayError('upstreamResponseError', `The provider accepted the task but its answer cannot be used in a request path: ${err.message}.`);
  }
}

/**
 * The result fields of a completed task, read from the final answer (the poll's, or the result
 * fetch's) with `$http_status` and `$request` bound. A required field that reads nothing usable
 * fails the task with 3003; an optional one is left out.
 */
export async function readResult(route: AsyncRoutePlan, body: unknown, httpStatus: number, request: Record<string, unknown>): Promise<{ result: Record<string, unknown> } | { error: GatewayError }> {
  const result: Record<string, unknown> = {};
  for (const [name, expr, optional] of route.result) {
    const raw = await descriptorExpression(route, `result.${name}`, () => expr.evaluate(body, { request, http_status: httpStatus }));
    if (optional && (raw === undefined || raw === null)) continue;
    const read = resultFieldValue(name, raw);
    if (!read.ok) return { error: new GatewayError('upstreamResponseError', `The provider reported success but its answer ${read.reason}.`) };
    result[name] = read.value;
  }
  return { result };
}

/** The submit path with the callback URL in the route's query parameter (upstream.callback.url_query), when it has one. */
export function submitPathWithCallback(route: AsyncRoutePlan, callbackUrl: string | undefined): string {
  const q = route.callback?.urlQuery;
  if (!q || callbackUrl === undefined) return route.submit.path;
  return `${route.submit.path}${route.submit.path.includes('?') ? '&' : '?'}${encodeURIComponent(q)}=${encodeURIComponent(callbackUrl)}`;
}

// How the lifecycle's rooms address a task's provider and read what it answers: the route and
// pool member of a task, upstream paths, optional fields of an answer, and the mapping of a
// provider's error (or a transport failure) to a counted service error.
import type { Logger } from 'pino';
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { upstreamErrors } from '../metrics/metrics.ts';
import { mapUpstreamError, UpstreamFailure, type UpstreamErrorFacts } from '../upstream/failure.ts';
import type { PoolMember } from '../upstream/pool.ts';
import type { CompiledExpr } from '../util/expr.ts';
import type { TaskRecord } from './task.ts';

export type AnswerStage = 'submit' | 'poll' | 'callback' | 'result';

export function routeOf(routes: ReadonlyMap<string, AsyncRoutePlan>, task: TaskRecord): AsyncRoutePlan {
  const route = routes.get(task.route);
  if (!route) throw new GatewayError(4005, `Task ${task.id} belongs to route ${task.route}, which is not configured.`);
  return route;
}

/**
 * The pool member that accepted the task (its polls and cancel go there). Tasks accepted by
 * versions before upstream pools (3212d0e, 2026-11-24) carry no member: they belong to the first one.
 * Undefined: that member left the config.
 */
export function memberOf(route: AsyncRoutePlan, task: TaskRecord): PoolMember | undefined {
  return task.upstream_member === undefined ? route.pool.first : route.pool.member(task.upstream_member);
}

/** An optional string an answer may carry (an error message or code), `$http_status` bound when given. */
export async function readOptional(expr: CompiledExpr | undefined, body: unknown, httpStatus?: number): Promise<string | undefined> {
  if (!expr || body === undefined) return undefined;
  const v = await expr.evaluate(body, httpStatus === undefined ? undefined : { http_status: httpStatus }).catch(() => undefined);
  return v === undefined || v === null || v === '' ? undefined : String(v);
}

/** A provider's answer mapped to its service code, counted for the vendor and stage. */
export async function mappedError(route: AsyncRoutePlan, stage: AnswerStage, facts: UpstreamErrorFacts): Promise<GatewayError> {
  return countedError(route, stage, await mapUpstreamError(route.errorRules, facts));
}

export function countedError(route: AsyncRoutePlan, stage: AnswerStage, err: GatewayError): GatewayError {
  upstreamErrors.inc({ vendor: route.vendor, stage, code: String(err.code) });
  return err;
}

/** Transport failures keep their own code (3001 unreachable, 3003 unparseable, 3004 timeout). */
export function asGatewayError(logger: Logger, route: AsyncRoutePlan, err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof UpstreamFailure) return new GatewayError(err.code, err.message);
  logger.error({ err, route: route.key }, 'unexpected error talking to the upstream');
  return new GatewayError(4002, 'An internal operation failed while talking to the provider.');
}

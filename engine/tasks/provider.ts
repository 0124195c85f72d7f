// How the lifecycle's rooms address a task's provider and read what it answers: the route and
// pool member of a task, upstream paths, optional fields of an answer, and the mapping of a
// provider's error (or a transport failure) to a counted service error.
import type { Logger } from 'pino';
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { descriptorDefects, upstreamErrors } from '../metrics/metrics.ts';
import { mapUpstreamError, UpstreamFailure, type UpstreamErrorFacts } from '../upstream/failure.ts';
import type { PoolMember } from '../upstream/pool.ts';
import type { CompiledExpr } from '../util/expr.ts';
import type { TaskRecord } from './task.ts';

export type AnswerStage = 'submit' | 'poll' | 'callback' | 'result';

export function routeOf(routes: ReadonlyMap<string, AsyncRoutePlan>, task: TaskRecord): AsyncRoutePlan {
  const route = routes.get(task.route);
  if (!route) throw new GatewayError('configurationError', `Task ${task.id} belongs to route ${task.route}, which is not configured.`);
  return route;
}

/**
 * The pool member that accepted the task (its polls and cancel go there). Tasks accepted by
 * versions before upstream pools (3212d0e, 2026-11-24) carry no member: they belong to the first one.
 * Undefined: that member left the config. (test/tasks/earlier-versions.test.ts)
 */
export function memberOf(route: AsyncRoutePlan, task: TaskRecord): PoolMember | undefined {
  return task.upstream_member === undefined ? route.pool.first : route.pool.member(task.upstream_member);
}

/**
 * A descriptor's expression that threw on what it was given (a JSONata error: not a missing
 * field, which reads as undefined): a defect of the descriptor, not the provider's doing (4011).
 * Counted when made (gateway_descriptor_defects_total); logged with its cause by reportDefect
 * where the task fails.
 */
export class DescriptorDefect extends GatewayError {
  readonly expression: string;
  constructor(route: AsyncRoutePlan, expression: string, cause: unknown) {
    super('descriptorExpressionFailed', `The route's descriptor failed at ${expression}: a defect of the gateway's configuration, not of the request or the provider; its operator has been told.`, { cause });
    this.expression = expression;
    descriptorDefects.inc({ vendor: route.vendor, route: route.key, expression });
  }
}

/** Run one of the route's expressions; one that throws becomes a DescriptorDefect. */
export async function descriptorExpression<T>(route: AsyncRoutePlan, expression: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (cause) {
    throw new DescriptorDefect(route, expression, cause);
  }
}

/** The defect's log line: the route, the expression and the error it threw. */
export function reportDefect(logger: Logger, route: AsyncRoutePlan, defect: DescriptorDefect, taskId?: string): void {
  logger.error({ err: defect.cause, task_id: taskId, route: route.key, expression: defect.expression }, 'a descriptor expression failed');
}

/**
 * An optional string an answer may carry (an error message or code), `$http_status` bound when
 * given. Its expression failing is still a defect (counted and logged), but the task is already
 * failing for the provider's reason: that reason is kept, without the text.
 */
export async function readOptional(logger: Logger, route: AsyncRoutePlan, expression: string, expr: CompiledExpr | undefined, body: unknown, httpStatus?: number): Promise<string | undefined> {
  if (!expr || body === undefined) return undefined;
  let v: unknown;
  try {
    v = await descriptorExpression(route, expression, () => expr.evaluate(body, httpStatus === undefined ? undefined : { http_status: httpStatus }));
  } catch (err) {
    if (!(err instanceof DescriptorDefect)) throw err;
    reportDefect(logger, route, err);
    return undefined;
  }
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
  if (err instanceof UpstreamFailure) return err.toGatewayError();
  logger.error({ err, route: route.key }, 'unexpected error talking to the upstream');
  return new GatewayError('internalOperationFailed', 'An internal operation failed while talking to the provider.');
}

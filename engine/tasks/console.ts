// A tenant's tasks as its console reads them: the filtered, newest-first listing over the
// store's per-tenant index, and one task with the events it emitted and their deliveries.
import { GatewayError } from '../errors/gateway-error.ts';
import { TASK_EVENTS, taskEventsAt } from '../events/types.ts';
import { exactCredits } from '../util/money.ts';
import { eventId } from './ending.ts';
import type { TaskStore } from './store.ts';
import { taskResponse, type TaskRecord } from './task.ts';
import type { TaskStatus } from '../vocabulary/task-status.ts';

export interface TaskListQuery {
  status?: TaskStatus;
  vendor?: string;
  /** A route id (`image_generation`) or its full key (`provider_b/image_generation`). */
  route?: string;
  /** Epoch ms: created at or after. */
  from?: number;
  /** Epoch ms: created before. */
  to?: number;
  limit: number;
  startingAfter?: string;
}

export interface TaskListPage {
  data: Record<string, unknown>[];
  has_more: boolean;
  next_cursor: string | null;
}

/** Index entries one request reads at most: a rare filter answers a partial page and a cursor instead of scanning a tenant's whole history. */
export const MAX_SCAN = 2000;

/** The delivery log, as the task view needs it (the webhooks service provides it). */
export type DeliveriesOfEvent = (tenantId: string, eventId: string) => Promise<Record<string, unknown>[]>;

export class TaskConsole {
  private readonly store: TaskStore;
  private readonly deliveriesOf: DeliveriesOfEvent;

  constructor(store: TaskStore, deliveriesOf: DeliveriesOfEvent) {
    this.store = store;
    this.deliveriesOf = deliveriesOf;
  }

  async list(tenantId: string, q: TaskListQuery): Promise<TaskListPage> {
    const found: TaskRecord[] = [];
    let after = q.startingAfter;
    let scanned = 0;
    let lastRead: string | undefined;
    for (;;) {
      const count = Math.min(200, Math.max(q.limit + 1, 50), MAX_SCAN - scanned);
      const batch = await this.store.listByTenant(tenantId, { after, from: q.from, to: q.to, count });
      if (!batch) {
        if (after === q.startingAfter) throw new GatewayError('invalidParameterValue', 'starting_after is not a task of this listing.', { errors: [{ pointer: '/query/starting_after', detail: 'not a cursor from a previous page' }] });
        break; // the entry we stood on went away between two steps: what was found is the answer
      }
      scanned += count;
      for (const t of batch.tasks) {
        lastRead = t.id;
        if (!matches(t, q)) continue;
        found.push(t);
        if (found.length > q.limit) return page(found.slice(0, q.limit), true);
      }
      if (batch.end || batch.last === undefined) return page(found, false);
      after = batch.last;
      if (scanned >= MAX_SCAN) return { data: found.map(taskView), has_more: true, next_cursor: lastRead ?? after };
    }
    return page(found, false);
  }

  async get(tenantId: string, id: string): Promise<Record<string, unknown>> {
    const t = await this.store.get(id);
    // Another tenant's task is as unknown as a missing one.
    if (!t || t.tenant_id !== tenantId) throw new GatewayError('resourceNotFound', `No task ${id}.`);
    const types = taskEventsAt(t.status);
    const events = await Promise.all(types.map(async (type) => {
      const id = eventId(t.id, type);
      const deliveries = await this.deliveriesOf(tenantId, id);
      return {
        id,
        type,
        // Events are not stored on their own: the time is the task's (creation, or its last change).
        created_at: type === TASK_EVENTS.created ? t.created_at : t.updated_at,
        deliveries: deliveries.map((d) => ({ id: d.id, endpoint_id: d.endpoint_id, status: d.status, attempt_count: d.attempt_count, next_attempt_at: d.next_attempt_at })),
      };
    }));
    return { task: taskView(t), events };
  }
}

function page(tasks: TaskRecord[], hasMore: boolean): TaskListPage {
  return { data: tasks.map(taskView), has_more: hasMore, next_cursor: hasMore ? tasks.at(-1)!.id : null };
}

function matches(t: TaskRecord, q: TaskListQuery): boolean {
  if (q.status !== undefined && t.status !== q.status) return false;
  if (q.vendor !== undefined && t.vendor !== q.vendor) return false;
  if (q.route !== undefined && t.route !== q.route && routeId(t) !== q.route) return false;
  return true;
}

const routeId = (t: TaskRecord): string => t.route.slice(t.route.indexOf('/') + 1);

/**
 * The task GET body plus where it ran and what it cost: the credits settled for a completed
 * task (its price, at most its hold), 0 for a failed one (never billed), null while it runs.
 */
export function taskView(t: TaskRecord): Record<string, unknown> {
  let cost: string | null = null;
  if (t.status === 'completed') cost = exactCredits(Math.min(t.charge ?? 0, t.hold ?? Number.MAX_SAFE_INTEGER));
  else if (t.status === 'failed') cost = exactCredits(0);
  return { ...taskResponse(t), vendor: t.vendor, route: routeId(t), cost };
}

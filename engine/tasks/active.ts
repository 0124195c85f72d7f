// Active tasks by vendor, for the gateway_tasks_active gauge: read at scrape time from the
// store's unsettled index (the safety sweep's), so every process reports the same figure.
import type { TaskStore } from './store.ts';
import { TERMINAL } from '../vocabulary/task-status.ts';

const PAGE = 1000;
/** A scrape reads at most PAGE × MAX_PAGES tasks (50,000); past that the figures are lower bounds. */
const MAX_PAGES = 50;

export async function activeByVendor(store: TaskStore): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let after: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const tasks = await store.listUnsettled(PAGE, after);
    for (const t of tasks) if (!TERMINAL.has(t.status)) counts.set(t.vendor, (counts.get(t.vendor) ?? 0) + 1);
    if (tasks.length < PAGE) break;
    after = tasks.at(-1)!.id;
  }
  return counts;
}

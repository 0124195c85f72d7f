// One metrics endpoint for `serve --workers`: the primary asks every worker for its registry
// (prom-client JSON) and sums them with prom-client's cluster aggregation
// (AggregatorRegistry.aggregate). Counters and histograms are summed; a gauge of one process
// (in flight, memory, event-loop lag, breaker state as that process saw it) keeps one series per
// worker, labelled `worker`; a store-wide gauge (aggregator 'first') is shown once.
//
// A worker's counters die with it, and a sum that drops reads as a counter reset to Prometheus
// (rate() would count the whole sum again). So the counters of a worker that exited are kept
// (its last answer) and added in, and a worker that does not answer in time counts with its last
// answer: the sum never goes down; it misses at most what a dead worker counted since its last
// scrape.
import { AggregatorRegistry } from 'prom-client';
import { registry } from '../metrics/metrics.ts';
import { ask, type Channel } from './ipc.ts';

type MetricJson = Awaited<ReturnType<typeof registry.getMetricsAsJSON>>[number];

/** How long a scrape waits for a worker's answer before using its last one. */
const WORKER_ANSWER_MS = 2000;

export class ClusterMetrics {
  /** Each live worker slot's last answer. */
  private readonly last = new Map<number, MetricJson[]>();
  /** The counters and histograms of workers that exited, summed. */
  private retired: MetricJson[] = [];

  /** Every worker summed, plus the primary's own process metrics and the cluster's. */
  async text(workers: ReadonlyMap<number, Channel>): Promise<string> {
    await Promise.all([...workers].map(async ([slot, channel]) => {
      try {
        const a = await ask(channel, { gw: 'metrics' }, WORKER_ANSWER_MS);
        // The cluster's own metrics are the primary's: a worker's are empty.
        if (a.metrics) this.last.set(slot, (a.metrics as MetricJson[]).filter((m) => !m.name.startsWith('gateway_cluster_')));
      } catch {
        /* busy or gone: its last answer stands in */
      }
    }));
    const own = (await registry.getMetricsAsJSON()).filter((m) => !m.name.startsWith('gateway_') || m.name.startsWith('gateway_cluster_'));
    return AggregatorRegistry.aggregate([
      ...[...this.last].map(([slot, m]) => perWorker(m, String(slot))),
      this.retired,
      // Last, so a store-wide gauge ('first') comes from a worker, never from the primary's empty one.
      perWorker(own, 'primary'),
    ]).metrics();
  }

  /** A worker exited: its counters stay in the sum, its gauges go. */
  async retire(slot: number): Promise<void> {
    const last = this.last.get(slot);
    this.last.delete(slot);
    if (!last) return;
    const kept = last.filter((m) => String(m.type) === 'counter' || String(m.type) === 'histogram');
    this.retired = await AggregatorRegistry.aggregate([this.retired, kept]).getMetricsAsJSON();
  }
}

/** Each per-process gauge of one process gets its `worker` label (then summing keeps it apart). */
function perWorker(metrics: MetricJson[], worker: string): MetricJson[] {
  return metrics.map((m) => {
    if (String(m.type) !== 'gauge' || m.aggregator === 'first') return m;
    return { ...m, aggregator: 'sum', values: m.values.map((v) => ({ ...v, labels: { ...v.labels, worker } })) };
  });
}

// A worker of `serve --workers`: one gateway process among N sharing the listen port. It answers
// the primary's questions (its metrics, its readiness), asks the primary for what needs every
// worker (/readyz: are the others ready; /metrics on the API port: the sum), and tells the
// primary once it serves.
import type { Logger } from 'pino';
import { GatewayError } from '../errors/gateway-error.ts';
import { registry, setMetricsText } from '../metrics/metrics.ts';
import { answer, ask, send } from './ipc.ts';

/** /readyz asks the primary about the other workers for at most this long (probes time out at 1 s). */
const SIBLINGS_MS = 900;
/** /metrics on the API port waits this long for the primary's sum (it waits 2 s per worker at most). */
const CLUSTER_METRICS_MS = 5000;
const SLOT_ENV = 'GATEWAY_WORKER_SLOT';

/** This worker's slot (1..N, kept across restarts), or undefined when this process is no worker. */
export function workerSlot(): number | undefined {
  const slot = Number(process.env[SLOT_ENV]);
  return process.send && Number.isInteger(slot) && slot > 0 ? slot : undefined;
}

export function slotEnv(slot: number): Record<string, string> {
  return { [SLOT_ENV]: String(slot) };
}

/** /readyz's part about the other workers: 503 / 4001 while one is not ready. */
export async function siblingsReady(): Promise<GatewayError | undefined> {
  let problem: string | undefined;
  try {
    problem = (await ask(process as never, { gw: 'siblings-ready' }, SIBLINGS_MS)).problem;
  } catch {
    problem = 'the serve --workers primary did not answer';
  }
  return problem === undefined ? undefined : new GatewayError('temporarilyUnavailable', `Not every worker of this instance is ready (${problem}); send requests to another instance.`);
}

/** Once the gateway runs: answer the primary, and tell it this worker serves at `url`. */
export function joinCluster(ownReadiness: () => Promise<GatewayError | undefined>, url: string, logger: Logger): () => void {
  // GET /metrics on the API port (metrics.token) serves every worker's sum, as the primary's listener does.
  setMetricsText(async () => (await ask(process as never, { gw: 'cluster-metrics' }, CLUSTER_METRICS_MS)).text ?? '');
  const stop = answer(process as never, {
    metrics: async () => ({ metrics: await registry.getMetricsAsJSON() }),
    ready: async () => ({ problem: (await ownReadiness())?.detail }),
  });
  send(process as never, { gw: 'started', url }, (err) => logger.error({ err }, 'could not tell the serve --workers primary that this worker runs'));
  return stop;
}

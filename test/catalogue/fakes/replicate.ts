// Replicate's predictions API as its documentation describes it (written from
// https://replicate.com/docs/reference/http, https://replicate.com/docs/topics/predictions/lifecycle
// and the official client github.com/replicate/replicate-javascript):
//   POST /v1/models/{owner}/{name}/predictions  {input, webhook?}  -> 201 prediction (status starting)
//   GET  /v1/predictions/{id}                  -> the prediction
//   POST /v1/predictions/{id}/cancel           -> the prediction, now canceled
// Bearer auth (401 otherwise); an input without its required prompt is refused with 422.
// Prompt markers: FAIL (failed, NSFW), ABORT (aborted: the deadline passed before it started),
// CANCELED (canceled at the provider), HOLD (processing until cancelled).
import { notFound, ProviderFake, type FakeTask, type Reply, type Request } from '../harness.ts';

export const REPLICATE_TOKEN = 'r8_catalogue_test_token';
const OUTPUTS = 'https://replicate.delivery/xezq';

export class ReplicateFake extends ProviderFake {
  /** When set, the cancel endpoint answers this instead (a refused cancel). */
  cancelReply?: Reply;

  protected override idFor(): string {
    return Array.from({ length: 26 }, () => 'abcdefghijklmnopqrstuvwxyz0123456789'[Math.floor(Math.random() * 36)]).join('');
  }

  protected handle(req: Request): Reply {
    if (req.headers.authorization !== `Bearer ${REPLICATE_TOKEN}`) {
      return { status: 401, body: { title: 'Unauthenticated', detail: 'You did not pass a valid authentication token', status: 401 } };
    }
    const create = /^\/v1\/models\/([^/]+)\/([^/]+)\/predictions$/.exec(req.path);
    if (req.method === 'POST' && create) return this.create(`${create[1]}/${create[2]}`, req.body);
    const one = /^\/v1\/predictions\/([a-z0-9]+)(\/cancel)?$/.exec(req.path);
    const t = one ? this.tasks.get(one[1]!) : undefined;
    if (!t) return notFound;
    if (req.method === 'GET' && !one![2]) return { status: 200, body: this.prediction(this.advance(t)) };
    if (req.method === 'POST' && one![2]) {
      if (this.cancelReply) return this.cancelReply;
      if (t.phase === 'queued' || t.phase === 'running') t.phase = 'cancelled';
      return { status: 200, body: this.prediction(t) };
    }
    return notFound;
  }

  private create(model: string, body: any): Reply {
    if (typeof body?.input?.prompt !== 'string') {
      return { status: 422, body: { detail: '- input: prompt is required', status: 422, title: 'Input validation failed' } };
    }
    const t = this.newTask(body.input.prompt, { ...body.input, model }, body.webhook);
    if (t.prompt.includes('ABORT')) t.end = 'aborted';
    if (t.prompt.includes('CANCELED')) t.end = 'canceled';
    return { status: 201, body: this.prediction(t) };
  }

  /** The prediction object of the docs' examples, in the task's state. */
  prediction(t: FakeTask): Record<string, unknown> {
    const model = t.input.model as string;
    const done = t.phase === 'succeeded' || t.phase === 'failed' || t.phase === 'cancelled';
    const status = t.phase === 'queued' ? 'starting' : t.phase === 'running' ? 'processing' : t.phase === 'cancelled' ? 'canceled' : t.phase === 'failed' && t.end ? t.end : t.phase;
    const video = model === 'minimax/video-01';
    const n = Number(t.input.num_outputs ?? 1);
    return {
      id: t.id,
      model,
      version: 'hidden',
      input: Object.fromEntries(Object.entries(t.input).filter(([k]) => k !== 'model')),
      logs: '',
      output: t.phase !== 'succeeded' ? null : video ? `${OUTPUTS}/${t.id}/output.mp4` : Array.from({ length: n }, (_, i) => `${OUTPUTS}/${t.id}/out-${i}.webp`),
      data_removed: false,
      error: status === 'failed' ? 'NSFW content detected. Try running it again, or try a different prompt.' : null,
      status,
      created_at: '2026-11-27T02:00:00.000Z',
      ...(t.phase !== 'queued' && status !== 'aborted' ? { started_at: '2026-11-27T02:00:01.000Z' } : {}),
      ...(done ? { completed_at: '2026-11-27T02:00:09.000Z', metrics: { predict_time: 8.1 } } : {}),
      urls: { cancel: `https://api.replicate.com/v1/predictions/${t.id}/cancel`, get: `https://api.replicate.com/v1/predictions/${t.id}`, web: `https://replicate.com/p/${t.id}` },
    };
  }
}

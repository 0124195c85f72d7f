// fal.ai's queue as its documentation describes it (written from https://docs.fal.ai/model-endpoints/queue,
// https://fal.ai/docs/documentation/model-apis/request-errors, https://docs.fal.ai/model-endpoints/webhooks
// and github.com/fal-ai/fal-js libs/client/src/queue.ts):
//   POST /{model_id}[?fal_webhook=URL]                 -> {request_id, status_url, response_url, cancel_url}
//   GET  /{owner}/{alias}/requests/{id}/status         -> 202 IN_QUEUE / IN_PROGRESS, 200 COMPLETED [+ error, error_type]
//   GET  /{owner}/{alias}/requests/{id}                -> the output; 400 while not done; 422 a refused input
//   PUT  /{owner}/{alias}/requests/{id}/cancel         -> 202 CANCELLATION_REQUESTED, 400 ALREADY_COMPLETED
// The status and result URLs name the app (owner/alias) without the model's sub-path. Auth is
// `Authorization: Key <key>`. Prompt markers: FAIL (COMPLETED with an error), TIMEOUT (error_type
// request_timeout), REFUSE (result 422), POLICY (result 422 content_policy_violation), HOLD.
import { randomUUID } from 'node:crypto';
import { notFound, ProviderFake, type FakeTask, type Reply, type Request } from '../harness.ts';

export const FAL_KEY = 'fal-catalogue-test-key';
const MODELS: Record<string, string> = { 'fal-ai/flux/schnell': 'fal-ai/flux', 'fal-ai/minimax/video-01': 'fal-ai/minimax' };

export class FalFake extends ProviderFake {
  protected override idFor(): string {
    return randomUUID();
  }

  protected handle(req: Request): Reply {
    if (req.headers.authorization !== `Key ${FAL_KEY}`) return { status: 401, body: { detail: 'No user found for Key ID and Secret' } };
    const model = req.method === 'POST' ? req.path.slice(1) : '';
    if (MODELS[model]) {
      const t = this.newTask(String(req.body?.prompt ?? ''), { ...req.body, model }, req.query.get('fal_webhook') ?? undefined);
      return { status: 200, body: { status: 'IN_QUEUE', queue_position: 0, ...this.urls(t) } };
    }
    const m = /^\/([^/]+\/[^/]+)\/requests\/([0-9a-f-]{36})(\/status|\/cancel)?$/.exec(req.path);
    const t = m ? this.tasks.get(m[2]!) : undefined;
    if (!t || MODELS[t.input.model] !== m![1]) return notFound;
    if (req.method === 'GET' && m![3] === '/status') return this.status(this.advance(t));
    if (req.method === 'GET' && !m![3]) return this.result(t);
    if (req.method === 'PUT' && m![3] === '/cancel') {
      if (t.phase !== 'queued' && t.phase !== 'running') return { status: 400, body: { status: 'ALREADY_COMPLETED' } };
      t.phase = 'cancelled';
      return { status: 202, body: { status: 'CANCELLATION_REQUESTED' } };
    }
    return notFound;
  }

  urls(t: FakeTask): Record<string, string> {
    const base = `${this.url}/${MODELS[t.input.model]}/requests/${t.id}`;
    return { request_id: t.id, response_url: base, status_url: `${base}/status`, cancel_url: `${base}/cancel` };
  }

  private status(t: FakeTask): Reply {
    if (t.phase === 'queued') return { status: 202, body: { status: 'IN_QUEUE', queue_position: 0, ...this.urls(t) } };
    if (t.phase === 'running') return { status: 202, body: { status: 'IN_PROGRESS', logs: [], ...this.urls(t) } };
    const failure = t.phase === 'cancelled' ? ['Request was cancelled', 'client_cancelled'] : t.prompt.includes('TIMEOUT') ? ['Request timed out', 'request_timeout'] : t.prompt.includes('FAIL') ? ['Internal server error', 'runner_server_error'] : undefined;
    return { status: 200, body: { status: 'COMPLETED', logs: [], ...(failure ? { error: failure[0], error_type: failure[1] } : {}), ...this.urls(t) } };
  }

  /** What response_url answers. */
  result(t: FakeTask): Reply {
    if (t.phase === 'queued' || t.phase === 'running') return { status: 400, body: { detail: 'Request is still in progress' } };
    if (t.prompt.includes('POLICY')) return { status: 422, body: { detail: [{ loc: ['body', 'prompt'], msg: 'The content could not be processed because it contained material flagged by a content checker.', type: 'content_policy_violation' }] } };
    if (t.prompt.includes('REFUSE')) return { status: 422, body: { detail: [{ loc: ['body', 'image_size'], msg: 'Input should be a valid size', type: 'value_error' }] } };
    if (t.input.model === 'fal-ai/minimax/video-01') return { status: 200, body: { video: { url: `https://v3.fal.media/files/${t.id}/output.mp4`, content_type: 'video/mp4', file_name: 'output.mp4', file_size: 1203840 } } };
    const n = Number(t.input.num_images ?? 1);
    return { status: 200, body: { images: Array.from({ length: n }, (_, i) => ({ url: `https://v3.fal.media/files/${t.id}/${i}.jpeg`, width: 1024, height: 768, content_type: 'image/jpeg' })), timings: { inference: 0.4 }, seed: 1234, has_nsfw_concepts: Array(n).fill(false), prompt: t.prompt } };
  }
}

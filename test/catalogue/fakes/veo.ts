// Veo through the Gemini API as its documentation describes it (written from
// https://ai.google.dev/gemini-api/docs/video and github.com/googleapis/js-genai):
//   POST /v1beta/models/{model}:predictLongRunning  -> {name: "models/{model}/operations/{id}"}
//   GET  /v1beta/models/{model}/operations/{id}      -> {name, done?, error?, response.generateVideoResponse}
// `x-goog-api-key` auth. Prompt markers: FILTER (done, no samples, raiMediaFilteredReasons),
// FAIL (done with error), HOLD (never done). No cancel is documented.
import { ProviderFake, type FakeTask, type Reply, type Request } from '../harness.ts';

export const VEO_KEY = 'AIza-catalogue-test-key';

export class VeoFake extends ProviderFake {
  protected override idFor(): string {
    return Math.random().toString(36).slice(2, 14);
  }

  protected handle(req: Request): Reply {
    if (req.headers['x-goog-api-key'] !== VEO_KEY) return { status: 403, body: { error: { code: 403, message: 'Method doesn\'t allow unregistered callers.', status: 'PERMISSION_DENIED' } } };
    const submit = /^\/v1beta\/models\/(veo-[a-z0-9.-]+):predictLongRunning$/.exec(req.path);
    if (req.method === 'POST' && submit) {
      const prompt = req.body?.instances?.[0]?.prompt;
      if (typeof prompt !== 'string') return { status: 400, body: { error: { code: 400, message: '* GenerateVideoRequest.instances[0].prompt: prompt is required', status: 'INVALID_ARGUMENT' } } };
      const t = this.newTask(prompt, { ...req.body, model: submit[1] });
      return { status: 200, body: { name: this.nameOf(t) } };
    }
    const poll = /^\/v1beta\/models\/(veo-[a-z0-9.-]+)\/operations\/([a-z0-9]+)$/.exec(req.path);
    const t = poll ? this.tasks.get(poll[2]!) : undefined;
    if (req.method !== 'GET' || !t || t.input.model !== poll![1]) return { status: 404, body: { error: { code: 404, message: 'Operation not found', status: 'NOT_FOUND' } } };
    return { status: 200, body: this.operation(this.advance(t)) };
  }

  nameOf(t: FakeTask): string {
    return `models/${t.input.model}/operations/${t.id}`;
  }

  operation(t: FakeTask): Record<string, unknown> {
    const name = this.nameOf(t);
    if (t.phase === 'queued') return { name };
    if (t.phase === 'running') return { name, done: false };
    const type = 'type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse';
    if (t.prompt.includes('FILTER')) return { name, done: true, response: { '@type': type, generateVideoResponse: { raiMediaFilteredCount: 1, raiMediaFilteredReasons: ['Unable to generate videos because the prompt may violate our policies.'] } } };
    if (t.phase === 'failed') return { name, done: true, error: { code: 13, message: 'Video generation failed due to an internal error.' } };
    return { name, done: true, response: { '@type': type, generateVideoResponse: { generatedSamples: [{ video: { uri: `https://generativelanguage.googleapis.com/v1beta/files/${t.id}:download?alt=media` } }] } } };
  }
}

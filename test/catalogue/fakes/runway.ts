// Runway's task API as its documentation describes it (written from https://docs.dev.runwayml.com/api/,
// https://docs.dev.runwayml.com/errors/task-failures/ and github.com/runwayml/sdk-node):
//   POST   /v1/image_to_video  -> {id}
//   GET    /v1/tasks/{id}      -> {id, createdAt, status: PENDING|THROTTLED|RUNNING|SUCCEEDED|FAILED|CANCELLED, ...}
//   DELETE /v1/tasks/{id}      -> 204 (cancels a pending, throttled or running task)
// Every call needs `Authorization: Bearer` and `X-Runway-Version: 2024-11-06` (400 without it).
// Prompt markers: FAIL (SAFETY.OUTPUT.VIDEO), SAFEIN (SAFETY.INPUT.TEXT), BADOUT
// (INTERNAL.BAD_OUTPUT.CODE01), CANCELLED (deleted at the provider), THROTTLE (THROTTLED first), HOLD.
import { randomUUID } from 'node:crypto';
import { notFound, ProviderFake, type FakeTask, type Reply, type Request } from '../harness.ts';

export const RUNWAY_SECRET = 'key_catalogue_test_secret';
const FAILURES: Record<string, [string, string]> = {
  FAIL: ['SAFETY.OUTPUT.VIDEO', 'The output was rejected by content moderation.'],
  SAFEIN: ['SAFETY.INPUT.TEXT', 'The prompt text was rejected by content moderation.'],
  BADOUT: ['INTERNAL.BAD_OUTPUT.CODE01', 'The generation was rejected for quality reasons.'],
};

export class RunwayFake extends ProviderFake {
  protected override idFor(): string {
    return randomUUID();
  }

  protected handle(req: Request): Reply {
    if (req.headers.authorization !== `Bearer ${RUNWAY_SECRET}`) return { status: 401, body: { error: 'Invalid API key' } };
    if (req.headers['x-runway-version'] !== '2024-11-06') return { status: 400, body: { error: 'The X-Runway-Version header is required.' } };
    if (req.method === 'POST' && req.path === '/v1/image_to_video') {
      const b = req.body ?? {};
      if (typeof b.promptImage !== 'string' || !['gen4_turbo', 'gen4.5'].includes(b.model) || !b.ratio) return { status: 400, body: { error: 'Validation of body failed' } };
      const t = this.newTask(String(b.promptText ?? ''), b);
      const marker = Object.keys(FAILURES).find((m) => t.prompt.includes(m));
      if (marker) t.end = marker;
      if (t.prompt.includes('CANCELLED')) t.end = 'CANCELLED';
      return { status: 200, body: { id: t.id } };
    }
    const m = /^\/v1\/tasks\/([0-9a-f-]{36})$/.exec(req.path);
    const t = m ? this.tasks.get(m[1]!) : undefined;
    if (!t) return notFound;
    if (req.method === 'GET') return { status: 200, body: this.task(this.advance(t)) };
    if (req.method === 'DELETE') {
      if (t.phase === 'queued' || t.phase === 'running') t.phase = 'cancelled';
      return { status: 204 };
    }
    return notFound;
  }

  task(t: FakeTask): Record<string, unknown> {
    const base = { id: t.id, createdAt: '2026-11-27T02:00:00.000Z' };
    if (t.phase === 'queued') return { ...base, status: t.prompt.includes('THROTTLE') ? 'THROTTLED' : 'PENDING' };
    if (t.phase === 'running') return { ...base, status: 'RUNNING', progress: 0.5 };
    if (t.phase === 'succeeded') return { ...base, status: 'SUCCEEDED', output: [`https://dnznrvs05pmza.cloudfront.net/${t.id}.mp4?_jwt=eyJhbGciOi`] };
    if (t.phase === 'cancelled' || t.end === 'CANCELLED') return { ...base, status: 'CANCELLED' };
    const [failureCode, failure] = FAILURES[t.end ?? 'FAIL']!;
    return { ...base, status: 'FAILED', failure, failureCode };
  }
}

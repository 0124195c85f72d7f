// Luma's Dream Machine API as its documentation describes it (written from
// https://docs.lumalabs.ai/reference/creategeneration, https://docs.lumalabs.ai/docs/video-generation
// and github.com/lumalabs/lumaai-node):
//   POST /dream-machine/v1/generations/video  -> 201 Generation {id, state: queued, ...}
//   GET  /dream-machine/v1/generations/{id}   -> Generation {state: queued|dreaming|completed|failed,
//                                                failure_reason, assets: {video, image}}
// callback_url, when given, receives the Generation object. Luma documents no cancel.
// Prompt markers: FAIL (moderation failure), HOLD (dreaming until a test ends it).
import { randomUUID } from 'node:crypto';
import { notFound, ProviderFake, type FakeTask, type Reply, type Request } from '../harness.ts';

export const LUMA_KEY = 'luma-catalogue-test-key';

export class LumaFake extends ProviderFake {
  protected override idFor(): string {
    return randomUUID();
  }

  protected handle(req: Request): Reply {
    if (req.headers.authorization !== `Bearer ${LUMA_KEY}`) return { status: 401, body: { detail: 'Invalid API key' } };
    if (req.method === 'POST' && req.path === '/dream-machine/v1/generations/video') {
      const b = req.body ?? {};
      if (!['ray-2', 'ray-flash-2'].includes(b.model)) return { status: 400, body: { detail: 'Invalid model' } };
      return { status: 201, body: this.generation(this.newTask(String(b.prompt ?? ''), b, b.callback_url)) };
    }
    const m = /^\/dream-machine\/v1\/generations\/([0-9a-f-]{36})$/.exec(req.path);
    const t = m ? this.tasks.get(m[1]!) : undefined;
    if (!t || req.method !== 'GET') return notFound;
    return { status: 200, body: this.generation(this.advance(t)) };
  }

  generation(t: FakeTask): Record<string, unknown> {
    const state = t.phase === 'queued' ? 'queued' : t.phase === 'running' ? 'dreaming' : t.phase === 'succeeded' ? 'completed' : 'failed';
    return {
      id: t.id,
      generation_type: 'video',
      state,
      failure_reason: state === 'failed' ? '400: prompt not allowed because advanced moderation failed' : null,
      created_at: '2026-11-27T02:00:00.000Z',
      assets: state === 'completed' ? { video: `https://storage.cdn-luma.com/dream_machine/${t.id}/video.mp4`, image: `https://storage.cdn-luma.com/dream_machine/${t.id}/thumb.jpg` } : null,
      model: t.input.model,
      request: { ...t.input, generation_type: 'video' },
    };
  }
}

// The Luma catalogue entry, alone, against Luma played from its documentation (fakes/luma.ts):
// completed (polled, and pushed to callback_url), failed by moderation, a client cancel (Luma has
// none: nothing is sent), and the ledger after each.
import { expect } from 'chai';
import { STORE, cancelRunning, completeByPush, expectReleased, expectSettled, runToEnd, withProvider } from './harness.ts';
import { LUMA_KEY, LumaFake } from './fakes/luma.ts';

const VIDEO = '/vendors/luma/v1/generations/video';

describe(`catalogue: luma (${STORE} store)`, function () {
  this.timeout(30_000);
  const p = withProvider('luma', () => new LumaFake(), { api_key: LUMA_KEY });

  it('ray-2: queued, dreaming, completed; assets.video comes back; billed per second', async () => {
    const { id, final } = await runToEnd(p.rig, VIDEO, { prompt: 'A serene lake surrounded by mountains at sunset', start_image: 'https://example.com/lake.jpg' });
    expect(final.body.task_info.status).to.equal('completed');
    const t = [...p.fake.tasks.values()].at(-1)!;
    expect(final.body.videos).to.deep.equal([`https://storage.cdn-luma.com/dream_machine/${t.id}/video.mp4`]);
    expect(p.fake.seen('POST', '/dream-machine/v1/generations/video').at(-1)!.body).to.deep.equal({
      prompt: 'A serene lake surrounded by mountains at sunset', model: 'ray-2', aspect_ratio: '16:9', resolution: '720p', duration: '5s', loop: false,
      keyframes: { frame0: { type: 'image', url: 'https://example.com/lake.jpg' } },
    });
    expect(p.fake.seen('GET', `/dream-machine/v1/generations/${t.id}`).length).to.be.at.least(3);
    await expectSettled(p.rig, id, 40_000); // 5 s x 0.08 USD
  });

  it('a generation failed by moderation: 3005 saying so, the hold released', async () => {
    const { id, final } = await runToEnd(p.rig, VIDEO, { prompt: 'FAIL something forbidden', model: 'ray-flash-2', duration: '9s' });
    expect(final.body.task_info.error.code).to.equal(3005);
    expect(final.body.task_info.error.detail).to.match(/moderation refused/);
    await expectReleased(p.rig, id);
  });

  it('a client cancel: Luma has no cancel, so nothing is sent; the task is cancelled here (4009) and released', async () => {
    const { id, answer } = await cancelRunning(p.rig, VIDEO, { prompt: 'HOLD a long one' }, p.fake);
    expect(answer.body.task_info.error.code).to.equal(4009);
    await new Promise((r) => setTimeout(r, 50));
    expect(p.fake.requests.filter((r) => r.method !== 'GET' && r.path !== '/dream-machine/v1/generations/video')).to.deep.equal([]);
    await expectReleased(p.rig, id);
  });
});

describe(`catalogue: luma callback_url as push callback (${STORE} store)`, function () {
  this.timeout(30_000);
  const p = withProvider('luma', () => new LumaFake(), { api_key: LUMA_KEY }, { publicBaseUrl: 'https://gw.example.com' });

  it('sends callback_url; the completed Generation pushed there ends the task, settled once', async () => {
    const { id, task, final } = await completeByPush(p.rig, p.fake, VIDEO, { prompt: 'HOLD until pushed' }, (t) => p.fake.generation(t));
    expect(final.body.videos).to.deep.equal([`https://storage.cdn-luma.com/dream_machine/${task.id}/video.mp4`]);
    await expectSettled(p.rig, id, 40_000);
  });
});

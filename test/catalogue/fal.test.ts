// The fal catalogue entry, alone, against fal's queue played from its documentation
// (fakes/fal.ts): the status and result URLs fal names (without the model's sub-path), 202 while
// queued, the result fetched from response_url, each documented end (COMPLETED, COMPLETED with an
// error, a timeout, a 422 result, a content-policy refusal), a client cancel sent as PUT
// cancel_url, fal_webhook as push callback, and the ledger after each.
import { expect } from 'chai';
import { STORE, cancelRunning, completeByPush, expectReleased, expectSettled, runToEnd, waitFor, withProvider } from './harness.ts';
import { FAL_KEY, FalFake } from './fakes/fal.ts';

const FLUX = '/vendors/fal/v1/fal-ai/flux/schnell';
const VIDEO = '/vendors/fal/v1/fal-ai/minimax/video-01';

describe(`catalogue: fal (${STORE} store)`, function () {
  this.timeout(30_000);
  const p = withProvider('fal', () => new FalFake(), { api_key: FAL_KEY });

  it('flux/schnell: submitted to /fal-ai/flux/schnell with `Key` auth, polled at the status_url fal named, the images read from response_url, billed per image', async () => {
    const { id, final } = await runToEnd(p.rig, FLUX, { prompt: 'a tiger eye', num_images: 2 });
    expect(final.body.task_info.status, JSON.stringify(final.body)).to.equal('completed');
    const t = [...p.fake.tasks.values()].at(-1)!;
    expect(final.body.images).to.deep.equal([0, 1].map((i) => `https://v3.fal.media/files/${t.id}/${i}.jpeg`));
    expect(final.body.seed).to.deep.equal([1234]);
    expect(p.fake.seen('POST', '/fal-ai/flux/schnell').at(-1)!.body).to.include({ prompt: 'a tiger eye', num_images: 2, image_size: 'landscape_4_3' });
    expect(p.fake.seen('GET', `/fal-ai/flux/requests/${t.id}/status`).length).to.be.at.least(3);
    expect(p.fake.seen('GET', `/fal-ai/flux/requests/${t.id}`)).to.have.length(1);
    for (const r of p.fake.requests) expect(r.headers.authorization).to.equal(`Key ${FAL_KEY}`);
    await expectSettled(p.rig, id, 600); // 2 x 0.003 USD
  });

  it('minimax/video-01: the {url} object fal answers becomes the video', async () => {
    const { id, final } = await runToEnd(p.rig, VIDEO, { prompt: 'a neon street at night' });
    const t = [...p.fake.tasks.values()].at(-1)!;
    expect(final.body.videos).to.deep.equal([`https://v3.fal.media/files/${t.id}/output.mp4`]);
    expect(p.fake.seen('GET', `/fal-ai/minimax/requests/${t.id}/status`).length).to.be.at.least(1);
    await expectSettled(p.rig, id, 50_000);
  });

  const ends: Array<[string, string, number, RegExp]> = [
    ['COMPLETED with an error', 'FAIL please', 3005, /Internal server error/],
    ['COMPLETED with a request_timeout', 'TIMEOUT please', 3004, /timed out/],
    ['a result refused with 422', 'REFUSE please', 3002, /Input should be a valid size/],
    ['a result refused by the content policy', 'POLICY please', 3005, /content policy/],
  ];
  for (const [name, prompt, code, detail] of ends) {
    it(`${name}: the task fails with ${code}, the hold released`, async () => {
      const { id, final } = await runToEnd(p.rig, FLUX, { prompt });
      expect(final.body.task_info.error.code, JSON.stringify(final.body)).to.equal(code);
      expect(final.body.task_info.error.detail).to.match(detail);
      await expectReleased(p.rig, id);
    });
  }

  it('a client cancel: 4009, PUT cancel_url sent once, the hold released', async () => {
    const { id, task, answer } = await cancelRunning(p.rig, FLUX, { prompt: 'HOLD a long one' }, p.fake);
    expect(answer.body.task_info.error.code).to.equal(4009);
    await waitFor(() => p.fake.seen('PUT', `/fal-ai/flux/requests/${task.id}/cancel`).length === 1, 3000, 'the PUT');
    expect(task.phase).to.equal('cancelled');
    await expectReleased(p.rig, id);
  });
});

describe(`catalogue: fal_webhook as push callback (${STORE} store)`, function () {
  this.timeout(30_000);
  const p = withProvider('fal', () => new FalFake(), { api_key: FAL_KEY }, { publicBaseUrl: 'https://gw.example.com' });

  it('the callback URL goes in the fal_webhook query parameter; fal\'s OK push ends the task through the result fetch, settled once', async () => {
    const push = (t: { id: string }) => ({ request_id: t.id, gateway_request_id: t.id, status: 'OK', payload: null });
    const { id, task, final } = await completeByPush(p.rig, p.fake, FLUX, { prompt: 'HOLD until pushed' }, push);
    expect(final.body.images).to.deep.equal([`https://v3.fal.media/files/${task.id}/0.jpeg`]);
    expect(p.fake.seen('POST', '/fal-ai/flux/schnell').at(-1)!.query.get('fal_webhook')).to.equal(task.callbackUrl);
    await expectSettled(p.rig, id, 300);
  });
});

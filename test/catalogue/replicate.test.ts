// The Replicate catalogue entry, alone, against a Replicate played from its documentation
// (fakes/replicate.ts): each documented end of a prediction (succeeded, failed, canceled,
// aborted), a client cancel (the provider's cancel called) and a refused one, the webhook as a
// push callback, and the ledger after each: a hold, then one settle or one release.
import { expect } from 'chai';
import { STORE, cancelRunning, completeByPush, expectReleased, expectSettled, runToEnd, waitFor, withProvider } from './harness.ts';
import { REPLICATE_TOKEN, ReplicateFake } from './fakes/replicate.ts';

const FLUX = '/vendors/replicate/v1/models/black-forest-labs/flux-schnell/predictions';
const VIDEO = '/vendors/replicate/v1/models/minimax/video-01/predictions';

describe(`catalogue: replicate (${STORE} store)`, function () {
  this.timeout(30_000);
  const p = withProvider('replicate', () => new ReplicateFake(), { api_token: REPLICATE_TOKEN });

  it('flux-schnell: submits {input} to the official model path with the bearer token, polls the prediction, and settles per image delivered', async () => {
    const { id, final } = await runToEnd(p.rig, FLUX, { prompt: 'a red bicycle', num_outputs: 2, aspect_ratio: '16:9' });
    expect(final.body.task_info.status).to.equal('completed');
    const t = [...p.fake.tasks.values()].at(-1)!;
    expect(final.body.images).to.deep.equal([0, 1].map((i) => `https://replicate.delivery/xezq/${t.id}/out-${i}.webp`));
    const submit = p.fake.seen('POST', '/v1/models/black-forest-labs/flux-schnell/predictions').at(-1)!;
    expect(submit.body.input).to.include({ prompt: 'a red bicycle', num_outputs: 2, aspect_ratio: '16:9', go_fast: true });
    expect(submit.body).not.to.have.property('version');
    expect(submit.headers.prefer, 'Prefer: wait is not used').to.equal(undefined);
    expect(p.fake.seen('GET', `/v1/predictions/${t.id}`).length).to.be.at.least(3);
    await expectSettled(p.rig, id, 600); // 2 images x 0.003 USD = 0.6 credits
  });

  it('video-01: one URL string as output becomes the one video; billed per video', async () => {
    const { id, final } = await runToEnd(p.rig, VIDEO, { prompt: 'a woman walking through Tokyo at night' });
    expect(final.body.task_info.status).to.equal('completed');
    expect(final.body.videos).to.have.length(1);
    expect(final.body.videos[0]).to.match(/^https:\/\/replicate\.delivery\/xezq\/[a-z0-9]+\/output\.mp4$/);
    await expectSettled(p.rig, id, 50_000);
  });

  const ends: Array<[string, string, number, RegExp]> = [
    ['failed (the safety checker)', 'FAIL a forbidden picture', 3005, /safety checker/],
    ['aborted (its deadline passed before it started)', 'ABORT a slow queue', 3004, /aborted/],
    ['canceled at the provider', 'CANCELED from the dashboard', 3005, /canceled at the provider/],
  ];
  for (const [name, prompt, code, detail] of ends) {
    it(`a prediction ${name}: the task fails with ${code}, the hold is released`, async () => {
      const { id, final } = await runToEnd(p.rig, FLUX, { prompt });
      expect(final.body.task_info.status).to.equal('failed');
      expect(final.body.task_info.error.code).to.equal(code);
      expect(final.body.task_info.error.detail).to.match(detail);
      await expectReleased(p.rig, id);
    });
  }

  it('an input Replicate refuses (422): the task fails with 3002 naming the field, the hold is released', async () => {
    // The gateway's own schema asks for a prompt too; a refusal here is the provider's, so it is
    // provoked by a fake that requires one more field than the descriptor knows.
    const orig = p.fake['create'].bind(p.fake);
    p.fake['create'] = () => ({ status: 422, body: { detail: '- input: seed must be greater than or equal to 0', status: 422, title: 'Input validation failed' } });
    try {
      const { id, final } = await runToEnd(p.rig, FLUX, { prompt: 'anything' });
      expect(final.body.task_info.error).to.include({ code: 3002 });
      expect(final.body.task_info.error.detail).to.match(/seed must be greater/);
      await expectReleased(p.rig, id);
    } finally {
      p.fake['create'] = orig;
    }
  });

  it('a client cancel: 4009, POST /v1/predictions/{id}/cancel sent once, the hold released', async () => {
    const { id, task, answer } = await cancelRunning(p.rig, FLUX, { prompt: 'HOLD a long one' }, p.fake);
    expect(answer.status, answer.text).to.equal(200);
    expect(answer.body.task_info.error.code).to.equal(4009);
    await waitFor(() => p.fake.seen('POST', `/v1/predictions/${task.id}/cancel`).length === 1, 3000, 'the cancel');
    expect(task.phase).to.equal('cancelled');
    await expectReleased(p.rig, id);
  });

  it('a cancel Replicate refuses: the task is still cancelled here and released once', async () => {
    p.fake.cancelReply = { status: 409, body: { detail: 'Prediction is not running', status: 409 } };
    try {
      const { id, task, answer } = await cancelRunning(p.rig, VIDEO, { prompt: 'HOLD another' }, p.fake);
      expect(answer.body.task_info.error.code).to.equal(4009);
      await waitFor(() => p.fake.seen('POST', `/v1/predictions/${task.id}/cancel`).length === 1, 3000, 'the cancel');
      await expectReleased(p.rig, id);
    } finally {
      p.fake.cancelReply = undefined;
    }
  });
});

describe(`catalogue: replicate webhooks as push callbacks (${STORE} store)`, function () {
  this.timeout(30_000);
  const p = withProvider('replicate', () => new ReplicateFake(), { api_token: REPLICATE_TOKEN }, { publicBaseUrl: 'https://gw.example.com' });

  it('sends its callback URL as `webhook`; the completed prediction pushed there ends the task, settled once', async () => {
    const { id, task, final } = await completeByPush(p.rig, p.fake, FLUX, { prompt: 'HOLD until pushed' }, (t) => p.fake.prediction(t));
    expect(final.body.task_info.status).to.equal('completed');
    expect(final.body.images).to.deep.equal([`https://replicate.delivery/xezq/${task.id}/out-0.webp`]);
    expect(p.fake.seen('POST', '/v1/models/black-forest-labs/flux-schnell/predictions').at(-1)!.body.webhook).to.equal(task.callbackUrl);
    await expectSettled(p.rig, id, 300);
  });
});

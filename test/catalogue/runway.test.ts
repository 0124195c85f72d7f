// The Runway catalogue entry, alone, against Runway played from its documentation
// (fakes/runway.ts): the version header on every call, THROTTLED as pending, each documented end
// (SUCCEEDED, FAILED with SAFETY.INPUT / SAFETY.OUTPUT / INTERNAL.BAD_OUTPUT, CANCELLED), a client
// cancel sent as DELETE /v1/tasks/{id}, and the ledger after each.
import { expect } from 'chai';
import { STORE, cancelRunning, expectReleased, expectSettled, runToEnd, waitFor, withProvider } from './harness.ts';
import { RUNWAY_SECRET, RunwayFake } from './fakes/runway.ts';

const I2V = '/vendors/runway/v1/image_to_video';
const IMAGE = 'https://example.com/lighthouse.jpg';

describe(`catalogue: runway (${STORE} store)`, function () {
  this.timeout(30_000);
  const p = withProvider('runway', () => new RunwayFake(), { api_secret: RUNWAY_SECRET });

  it('gen4_turbo by default: the version header and bearer secret on every call, THROTTLED waits, the output URL comes back, billed per second', async () => {
    const { id, final } = await runToEnd(p.rig, I2V, { promptImage: IMAGE, promptText: 'THROTTLE the beam sweeps across the ocean' });
    expect(final.body.task_info.status).to.equal('completed');
    const t = [...p.fake.tasks.values()].at(-1)!;
    expect(final.body.videos).to.deep.equal([`https://dnznrvs05pmza.cloudfront.net/${t.id}.mp4?_jwt=eyJhbGciOi`]);
    expect(p.fake.seen('POST', '/v1/image_to_video').at(-1)!.body).to.deep.equal({ model: 'gen4_turbo', promptImage: IMAGE, promptText: 'THROTTLE the beam sweeps across the ocean', ratio: '1280:720', duration: 5 });
    for (const r of p.fake.requests) expect(r.headers['x-runway-version'], `${r.method} ${r.path}`).to.equal('2024-11-06');
    await expectSettled(p.rig, id, 25_000); // 5 s x 0.05 USD
  });

  it('gen4.5 for 10 seconds is held and settled at its own rate', async () => {
    const { id, final } = await runToEnd(p.rig, I2V, { model: 'gen4.5', promptImage: IMAGE, promptText: 'the cat turns its head', duration: 10, ratio: '720:1280', seed: 42 });
    expect(final.body.task_info.status).to.equal('completed');
    await expectSettled(p.rig, id, 120_000); // 10 s x 0.12 USD
  });

  const ends: Array<[string, string, RegExp]> = [
    ['SAFETY.OUTPUT', 'FAIL a forbidden scene', /moderation withheld the output/],
    ['SAFETY.INPUT', 'SAFEIN a forbidden prompt', /moderation refused an input/],
    ['INTERNAL.BAD_OUTPUT', 'BADOUT text overlaid on the image', /quality reasons/],
    ['CANCELLED (deleted at the provider)', 'CANCELLED elsewhere', /cancelled or deleted at the provider/],
  ];
  for (const [name, prompt, detail] of ends) {
    it(`a task ending ${name}: failed 3005, the hold released`, async () => {
      const { id, final } = await runToEnd(p.rig, I2V, { promptImage: IMAGE, promptText: prompt });
      expect(final.body.task_info.error.code).to.equal(3005);
      expect(final.body.task_info.error.detail).to.match(detail);
      await expectReleased(p.rig, id);
    });
  }

  it('a client cancel: 4009, DELETE /v1/tasks/{id} sent once, the hold released', async () => {
    const { id, task, answer } = await cancelRunning(p.rig, I2V, { promptImage: IMAGE, promptText: 'HOLD a long one' }, p.fake);
    expect(answer.body.task_info.error.code).to.equal(4009);
    await waitFor(() => p.fake.seen('DELETE', `/v1/tasks/${task.id}`).length === 1, 3000, 'the DELETE');
    expect(task.phase).to.equal('cancelled');
    await expectReleased(p.rig, id);
  });
});

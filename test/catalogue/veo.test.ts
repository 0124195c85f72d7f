// The Veo catalogue entry, alone, against the Gemini API played from its documentation
// (fakes/veo.ts): the operation name polled as the path it is, done with samples, done with no
// samples (the safety filters: 3005 with their reasons), done with an error, a client cancel
// refused (Veo has none: 409 / 2006, the task runs on), and the ledger after each.
import { expect } from 'chai';
import { STORE, call, create, expectReleased, expectSettled, runToEnd, withProvider } from './harness.ts';
import { VEO_KEY, VeoFake } from './fakes/veo.ts';
import { waitForTask } from '../helpers/gateway.ts';

const VEO = '/vendors/veo/v1/models/veo-3.0-generate-001/videos';

describe(`catalogue: veo (${STORE} store)`, function () {
  this.timeout(30_000);
  const p = withProvider('veo', () => new VeoFake(), { api_key: VEO_KEY });

  it('submits {instances, parameters} to :predictLongRunning, polls the operation name as its path, and reads the sample\'s URI; 8 seconds billed', async () => {
    const { id, final } = await runToEnd(p.rig, VEO, { prompt: 'two people staring at a drawing', aspect_ratio: '9:16' });
    expect(final.body.task_info.status, JSON.stringify(final.body)).to.equal('completed');
    const t = [...p.fake.tasks.values()].at(-1)!;
    expect(final.body.videos).to.deep.equal([`https://generativelanguage.googleapis.com/v1beta/files/${t.id}:download?alt=media`]);
    expect(p.fake.seen('POST', '/v1beta/models/veo-3.0-generate-001:predictLongRunning').at(-1)!.body).to.deep.equal({ instances: [{ prompt: 'two people staring at a drawing' }], parameters: { aspectRatio: '9:16', resolution: '720p' } });
    expect(p.fake.seen('GET', `/v1beta/models/veo-3.0-generate-001/operations/${t.id}`).length).to.be.at.least(3);
    for (const r of p.fake.requests) expect(r.headers['x-goog-api-key']).to.equal(VEO_KEY);
    await expectSettled(p.rig, id, 320_000); // 8 s x 0.40 USD
  });

  it('done with no samples (the safety filters): 3005 naming their reason, the hold released', async () => {
    const { id, final } = await runToEnd(p.rig, VEO, { prompt: 'FILTER something' });
    expect(final.body.task_info.error.code).to.equal(3005);
    expect(final.body.task_info.error.detail).to.match(/safety filters withheld the video: Unable to generate videos/);
    await expectReleased(p.rig, id);
  });

  it('done with an error: 3005 with its message, the hold released', async () => {
    const { id, final } = await runToEnd(p.rig, VEO, { prompt: 'FAIL please' });
    expect(final.body.task_info.error.code).to.equal(3005);
    expect(final.body.task_info.error.detail).to.match(/internal error/);
    await expectReleased(p.rig, id);
  });

  it('a client cancel is refused (409 / 2006): Veo has no cancel, the task runs on and is settled when done', async () => {
    const id = await create(p.rig, VEO, { prompt: 'a slow one' });
    const answer = await call(p.rig.base, 'POST', `${VEO}/${id}/cancel`, { key: p.rig.key });
    expect(answer.status, answer.text).to.equal(409);
    expect(answer.body.error_code ?? answer.body.code).to.equal(2006);
    const final = await waitForTask(p.rig.base, `${VEO}/${id}`, p.rig.key);
    expect(final.body.task_info.status).to.equal('completed');
    await expectSettled(p.rig, id, 320_000);
  });
});

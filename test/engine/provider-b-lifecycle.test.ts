// provider_b end to end: a real listening gateway in front of a real upstream HTTP server that
// speaks the image tool's submit/fetch style. Outcomes are chosen by words in the prompt.
import { expect } from 'chai';
import type { ServerResponse } from 'node:http';
import type { Gateway } from '../../engine/gateway.ts';
import type { GatewayEvent } from '../../engine/events/bus.ts';
import { call, newTenant, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { FakeUpstream, json, type Seen } from '../helpers/upstream.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const VIDEOS = '/vendors/provider_b/v1/tob/video-diffusion';

/** The image tool's upstream: per task, a script of poll answers chosen by the prompt. */
function imageToolUpstream(): FakeUpstream & { release(prompt: string): void } {
  const up = new FakeUpstream() as FakeUpstream & { release(prompt: string): void };
  const released = new Set<string>();
  up.release = (prompt) => void released.add(prompt);
  const tasks = new Map<string, { prompt: string; polls: number }>();
  let seq = 0;
  const submit = (req: Seen, res: ServerResponse) => {
    const prompt: string = req.body.prompt;
    if (prompt.includes('reject')) return json(res, 200, { code: 24, description: 'banned prompt', result: null });
    if (prompt.includes('submit500')) return json(res, 500, { error: 'boom' });
    if (prompt.includes('nothing')) return; // never answers: the gateway's timeout decides
    if (prompt.includes('noid')) return json(res, 200, { code: 1, description: 'ok' });
    const id = `up-${++seq}`;
    tasks.set(id, { prompt, polls: 0 });
    json(res, 200, { code: 1, description: 'Submit success', result: id });
  };
  up.on('POST', '/mj/submit/imagine', submit).on('POST', '/mj/submit/video', submit);
  up.on('GET', /^\/mj\/task\/[^/]+\/fetch$/, (req, res) => {
    const id = req.path.split('/')[3]!;
    const t = tasks.get(id);
    if (!t) return json(res, 404, { error: 'unknown' });
    t.polls++;
    if (t.prompt.includes('garbage')) return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>oops</html>');
    if (t.prompt.includes('poll503')) return json(res, 503, { error: 'busy' });
    if (t.prompt.includes('flaky') && t.polls === 1) return json(res, 503, { error: 'busy' });
    const held = t.prompt.includes('held') && !released.has(t.prompt);
    if (t.prompt.includes('hang') || held || t.polls < 3) return json(res, 200, { id, status: t.polls === 1 ? 'SUBMITTED' : 'IN_PROGRESS', imageUrls: null });
    if (t.prompt.includes('fail')) return json(res, 200, { id, status: 'FAILURE', failReason: 'Banned prompt detected' });
    if (t.prompt.includes('weird')) return json(res, 200, { id, status: 'EXPLODED' });
    json(res, 200, {
      id, status: 'SUCCESS', progress: '100%',
      imageUrls: [0, 1, 2, 3].map((i) => `https://cdn.example.com/${id}/${i}.png`),
      videoUrls: [{ url: `https://cdn.example.com/${id}/0.mp4` }],
    });
  });
  return up;
}

describe('provider_b through a real gateway and a real upstream', () => {
  let up: ReturnType<typeof imageToolUpstream>;
  let gw: Gateway;
  let key: string;
  const events: GatewayEvent[] = [];

  before(async () => {
    up = await imageToolUpstream().start();
    gw = await startTestGateway({ sandbox: false, only: ['provider_b'], upstreams: { provider_b: { base_url: up.url, credentials: { api_key: 'test-upstream-secret' }, timeout_ms: 300 } } });
    gw.bus.subscribe((e) => void events.push(e));
    ({ key } = await newTenant(gw));
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  /** The events of one task, once at least `n` have been published (and a moment for extras). */
  async function eventsOf(taskId: string, n: number): Promise<GatewayEvent[]> {
    const of = () => events.filter((e) => (e.data.payload as any)?.task_info?.id === taskId);
    for (const deadline = Date.now() + 5000; of().length < n && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 50));
    return of();
  }

  const create = (path: string, body: unknown, headers: Record<string, string> = {}) => call(gw.url, 'POST', path, { key, body, headers });

  it('creates → 202 pending → processing → completed, with four image URLs', async () => {
    const incoming = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const created = await create(IMAGES, { prompt: 'a red fox, held' }, { traceparent: incoming });
    expect(created.status).to.equal(202);
    const info = created.body.task_info;
    expect(info.status).to.equal('pending');
    expect(info.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Date.parse(info.created_at)).to.be.a('number').and.not.NaN;
    expect(info.updated_at).to.equal(info.created_at);
    expect(Object.keys(created.body)).to.deep.equal(['task_info']);

    // The upstream holds the task running until the test lets it finish.
    const processing = await waitForTask(gw.url, `${IMAGES}/${info.id}`, key, ['processing', 'completed']);
    expect(processing.body.task_info.status).to.equal('processing');
    expect(processing.body.task_info.updated_at >= info.created_at).to.equal(true);
    up.release('a red fox, held');
    const done = await waitForTask(gw.url, `${IMAGES}/${info.id}`, key);
    expect(done.status).to.equal(200);
    expect(done.body.task_info.status).to.equal('completed');
    expect(done.body.task_info.error).to.equal(undefined);
    expect(done.body.images).to.have.length(4);
    for (const u of done.body.images) expect(u).to.match(/^https:\/\/cdn\.example\.com\/up-\d+\/\d\.png$/);

    // The upstream saw the descriptor's mapping, the vendor's auth header and the caller's trace.
    const submit = up.seen.find((s) => s.path === '/mj/submit/imagine' && s.body.prompt === 'a red fox, held')!;
    expect(submit.body).to.deep.equal({ prompt: 'a red fox, held', base64Array: [] });
    expect(submit.headers['mj-api-secret']).to.equal('test-upstream-secret');
    expect(submit.headers.traceparent).to.match(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);

    // The event follows the state change (settlement first): wait for it, then count.
    const mine = await eventsOf(info.id, 2);
    expect(mine.map((e) => e.type)).to.deep.equal(['task.created', 'task.succeeded']);
    expect(mine[0]!.data).to.deep.include({ vendor: 'provider_b', model_name: 'diffusion' });
    expect((mine[1]!.data.payload as any).images).to.have.length(4);
  });

  it('video generation completes with videos', async () => {
    const created = await create(VIDEOS, { prompt: 'https://example.com/cat.png the cat blinks', video_type: 1 });
    expect(created.status).to.equal(202);
    const done = await waitForTask(gw.url, `${VIDEOS}/${created.body.task_info.id}`, key);
    expect(done.body.task_info.status).to.equal('completed');
    expect(done.body.videos).to.deep.equal([`https://cdn.example.com/${up.seen.at(-1)!.path.split('/')[3]}/0.mp4`]);
    const submit = up.seen.find((s) => s.path === '/mj/submit/video')!;
    expect(submit.body).to.deep.equal({ prompt: 'https://example.com/cat.png the cat blinks', videoType: '720p', motion: 'low' });
  });

  const failures: Array<[string, string, number]> = [
    ['the provider fails the task', 'fail please', 3005],
    ['the provider refuses the submission inside a 200 (mapped by the descriptor)', 'reject me', 3002],
    ['the provider answers the submission with a 5xx', 'submit500', 3001],
    ['the provider never answers the submission', 'nothing', 3004],
    ['the submission answer has no task id', 'noid', 3003],
    ['polls get garbage (non-JSON)', 'garbage', 3003],
    ['polls keep getting 5xx', 'poll503', 3001],
    ['the provider reports an unknown status', 'weird', 3003],
    ['the task never finishes: safety net', 'hang', 4008],
  ];
  for (const [what, prompt, code] of failures) {
    it(`${what} → failed with ${code}, GET still 200`, async () => {
      const created = await create(IMAGES, { prompt });
      expect(created.status).to.equal(202);
      const done = await waitForTask(gw.url, `${IMAGES}/${created.body.task_info.id}`, key);
      expect(done.status).to.equal(200);
      expect(done.body.task_info.status).to.equal('failed');
      expect(done.body.task_info.error.code).to.equal(code);
      expect(done.body.task_info.error.title).to.be.a('string').and.not.empty;
      expect(done.body.task_info.error.detail).to.be.a('string').and.not.empty;
      expect(done.body.images).to.equal(undefined);
      const failed = (await eventsOf(created.body.task_info.id, 2)).filter((e) => e.type === 'task.failed');
      expect(failed).to.have.length(1);
      expect((failed[0]!.data.payload as any).task_info.error.code).to.equal(code);
    });
  }

  it('one 5xx poll is tolerated: the task still completes', async () => {
    const created = await create(IMAGES, { prompt: 'flaky fox' });
    const done = await waitForTask(gw.url, `${IMAGES}/${created.body.task_info.id}`, key);
    expect(done.body.task_info.status).to.equal('completed');
  });

  it('a late or duplicate poll never moves a finished task', async () => {
    const created = await create(IMAGES, { prompt: 'fox then fail' });
    const id = created.body.task_info.id;
    // "then fail" contains "fail": the upstream fails it; then replay polls at a finished task.
    const done = await waitForTask(gw.url, `${IMAGES}/${id}`, key);
    expect(done.body.task_info.status).to.equal('failed');
    await eventsOf(id, 2);
    const before = events.length;
    await Promise.all([gw.lifecycle.poll(id, 100), gw.lifecycle.poll(id, 101), gw.lifecycle.deadline(id), gw.lifecycle.submit(id)]);
    const again = await call(gw.url, 'GET', `${IMAGES}/${id}`, { key });
    expect(again.body).to.deep.equal(done.body);
    expect(events.length).to.equal(before);
  });

  it('concurrent polls of one task finish it once', async () => {
    const created = await create(IMAGES, { prompt: 'race fox' });
    const id = created.body.task_info.id;
    await waitForTask(gw.url, `${IMAGES}/${id}`, key, ['processing', 'completed']);
    await Promise.all(Array.from({ length: 8 }, (_, i) => gw.lifecycle.poll(id, 200 + i)));
    await waitForTask(gw.url, `${IMAGES}/${id}`, key);
    const finished = (await eventsOf(id, 2)).filter((e) => e.type !== 'task.created');
    expect(finished).to.have.length(1);
  });

  it('a task is read only on its own route family', async () => {
    const created = await create(IMAGES, { prompt: 'a fox' });
    const r = await call(gw.url, 'GET', `${VIDEOS}/${created.body.task_info.id}`, { key });
    expect(r.status).to.equal(404);
    expect(r.body.error_code).to.equal(2005);
  });
});

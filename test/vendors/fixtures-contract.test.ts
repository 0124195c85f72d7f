// Every async route of every shipped vendor carries fixtures of its upstream's answers
// (created, running, succeeded, failed; queued optional), and its compiled mappings read them:
// the task id from `created`, each state's status, the result fields of `succeeded` (URL lists),
// the error message of `failed`. Also the pricing of every route of this issue, from the spec.
import { expect } from 'chai';
import type { AsyncRoutePlan } from '../../engine/descriptors/compile.ts';
import { resultFieldValue } from '../../engine/descriptors/result-fields.ts';
import type { Gateway } from '../../engine/gateway.ts';
import { fill, vars } from './fixture-upstream.ts';
import { vendorGateway } from './support.ts';

const EXPECTED_STATUS: Record<string, string> = { queued: 'pending', running: 'processing', succeeded: 'completed', failed: 'failed', cancelled: 'failed' };

describe('vendor fixtures and the mappings that read them', () => {
  let gw: Gateway;
  let routes: AsyncRoutePlan[];
  before(async () => {
    ({ gw } = await vendorGateway());
    routes = gw.vendors.flatMap((v) => v.routes.filter((r): r is AsyncRoutePlan => r.kind === 'async'));
  });
  after(async () => {
    await gw.close();
  });

  it('the shipped async routes include every route of this issue', () => {
    expect(routes.map((r) => r.key)).to.include.members([
      'provider_a/video_generation', 'provider_d/image_generation', 'provider_d/video_generation', 'provider_e/video_generation', 'provider_f/text_to_video',
    ]);
  });

  it('each async route maps its own fixtures', async () => {
    for (const route of routes) {
      const fixtures = gw.vendors.find((v) => v.vendor === route.vendor)!.loaded.fixtures.get(route.id);
      expect(fixtures, `${route.key} has fixtures`).to.not.equal(undefined);
      for (const name of ['created', 'running', 'succeeded', 'failed']) expect(fixtures!.has(name), `${route.key}: ${name}.json`).to.equal(true);
      const id = `up-${route.id}-1`;
      const v = vars(id);
      expect(await route.submit.taskId.evaluate(fill(fixtures!.get('created'), v)), `${route.key}: task id of created`).to.equal(id);
      for (const [name, want] of Object.entries(EXPECTED_STATUS)) {
        if (!fixtures!.has(name)) continue;
        const raw = await route.poll.status.evaluate(fill(fixtures!.get(name), v));
        expect(route.poll.statusMap[String(raw)], `${route.key}: status of ${name}`).to.equal(want);
      }
      const succeeded = fill(fixtures!.get('succeeded'), v);
      expect(route.result.length, `${route.key} declares result fields`).to.be.greaterThan(0);
      for (const [field, expr] of route.result) {
        // Read as the lifecycle reads it: URL strings whatever shape the upstream spells them in.
        const read = resultFieldValue(field, await expr.evaluate(succeeded, { request: {} }));
        expect(read, `${route.key}: ${field}`).to.include({ ok: true });
        const list = (read as { value: unknown[] }).value;
        for (const u of list) expect(u, `${route.key}: ${field}`).to.be.a('string').and.match(/^https:\/\/files\.example\.com\//);
      }
      const message = await route.poll.errorMessage?.evaluate(fill(fixtures!.get('failed'), v));
      expect(message, `${route.key}: error message of failed`).to.be.a('string').and.not.empty;
    }
  });

  describe('pricing', () => {
    const plan = (key: string) => routes.find((r) => r.key === key)!.pricing;
    const usd = (milli: number) => milli / 100_000; // 100 credits per USD, 1000 milli-credits per credit

    it('model A: per second by resolution (480p 0.050, 720p 0.100, 1080p 0.200); hold covers the output, plus 15 s with reference videos', async () => {
      const a = plan('provider_a/video_generation');
      const req = (o: Record<string, unknown>) => ({ prompt: 'p', resolution: '1080p', duration: 5, reference_videos: null, ...o });
      expect(usd(await a.hold(req({ resolution: '480p' })))).to.equal(0.25);
      expect(usd(await a.hold(req({ resolution: '720p' })))).to.equal(0.5);
      expect(usd(await a.hold(req({})))).to.equal(1);
      expect(usd(await a.hold(req({ duration: -1 })))).to.equal(6); // the model may choose up to 30 s
      expect(usd(await a.hold(req({ reference_videos: ['https://v/a.mp4'] })))).to.equal(4); // 5 + 15 s
      expect(usd(await a.hold(req({ duration: 20, reference_videos: ['https://v/a.mp4'] })))).to.equal(6); // capped at 30 s
      // billed: reference-video seconds + generated seconds, as the upstream reports them
      expect(usd(await a.settle(req({ reference_videos: ['https://v/a.mp4'] }), {}, { duration: 5, usage: { input_video_seconds: 7.2 } }))).to.equal(2.6); // ceil(12.2) = 13 s
      expect(usd(await a.settle(req({}), {}, { duration: 5, usage: { input_video_seconds: 0 } }))).to.equal(1);
      expect(usd(await a.settle(req({ resolution: '720p' }), {}, { duration: 5 }))).to.equal(0.5);
      expect(a.estimated).to.equal(false);
    });

    it('model D: per image times n (price not in spec, marked estimated); settled on the images delivered', async () => {
      const d = plan('provider_d/image_generation');
      expect(d.estimated).to.equal(true);
      expect(d.note).to.match(/price not in spec/);
      expect(await d.hold({ prompt: 'p', n: 4 })).to.equal(4 * (await d.hold({ prompt: 'p', n: 1 })));
      expect(await d.settle({ prompt: 'p', n: 4 }, { images: ['a', 'b', 'c'] })).to.equal(3 * (await d.hold({ prompt: 'p', n: 1 })));
    });

    it('models E, F and G: per second of video, marked "price not in spec"', async () => {
      for (const key of ['provider_e/video_generation', 'provider_f/text_to_video', 'provider_d/video_generation']) {
        const p = plan(key);
        expect(p.estimated, key).to.equal(true);
        expect(p.note, key).to.match(/price not in spec/);
        expect(p.unit, key).to.equal('second');
      }
      const e = plan('provider_e/video_generation');
      expect(await e.hold({ prompt: 'p', duration: 15 })).to.equal(3 * (await e.hold({ prompt: 'p', duration: 5 })));
      const f = plan('provider_f/text_to_video');
      expect(await f.hold({ prompt: 'p', mode: 'pro', duration: 10 })).to.be.greaterThan(await f.hold({ prompt: 'p', mode: 'std', duration: 10 }));
      expect(await f.settle({ prompt: 'p', mode: 'std', duration: 10 }, {}, { data: { task_result: { videos: [{ duration: '5' }] } } })).to.equal(await f.hold({ prompt: 'p', mode: 'std', duration: 5 }));
    });
  });
});

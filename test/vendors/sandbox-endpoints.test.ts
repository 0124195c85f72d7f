// Every route of the spec's endpoint table answers through the sandbox (sandbox: true, the
// default configuration): asynchronous creates reach `completed` with their result field, the
// status routes read them, and the chat routes answer.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { call, waitForTask } from '../helpers/gateway.ts';
import { vendorGateway } from './support.ts';

interface AsyncRow {
  create: string;
  status: string;
  body: unknown;
  createStatus: number;
  field: 'images' | 'videos';
}

const ASYNC: AsyncRow[] = [
  { create: '/vendors/provider_a/v1/model_a/generation', status: '/vendors/provider_a/v1/model_a/generation', body: { prompt: 'a paper boat' }, createStatus: 200, field: 'videos' },
  { create: '/vendors/provider_b/v1/tob/video-diffusion', status: '/vendors/provider_b/v1/tob/video-diffusion', body: { prompt: 'https://example.com/cat.png the cat blinks', video_type: 0 }, createStatus: 202, field: 'videos' },
  { create: '/vendors/provider_b/v1/tob/diffusion', status: '/vendors/provider_b/v1/tob/diffusion', body: { prompt: 'a lighthouse' }, createStatus: 202, field: 'images' },
  { create: '/vendors/provider_d/v1/model_d/generation', status: '/vendors/provider_d/v1/model_d/generation', body: { prompt: 'a red fox' }, createStatus: 202, field: 'images' },
  { create: '/vendors/provider_e/v1/model_e/generation', status: '/vendors/provider_e/v1/model_e/generation', body: { prompt: 'clouds' }, createStatus: 202, field: 'videos' },
  { create: '/vendors/provider_f/v1/model_f/text-to-video/generation', status: '/vendors/provider_f/v1/model_f/text-to-video/generation', body: { prompt: 'a samurai' }, createStatus: 202, field: 'videos' },
  // Model G: the spec's status route; tasks come from the gateway's creation route beside it.
  { create: '/vendors/provider_d/v1/model_g/generation', status: '/vendors/provider_d/v1/model_g/generation', body: { first_frame: 'https://example.com/cat.png' }, createStatus: 202, field: 'videos' },
];

describe('every endpoint of the spec answers through the sandbox', function () {
  this.timeout(30_000);
  let ctx: { gw: Gateway; key: string };
  before(async () => {
    ctx = await vendorGateway({ sandbox: true });
  });
  after(async () => {
    await ctx.gw.close();
  });

  for (const row of ASYNC) {
    it(`POST ${row.create} → ${row.createStatus}; GET ${row.status}/{task_id} → completed with ${row.field}`, async () => {
      const created = await call(ctx.gw.url, 'POST', row.create, { key: ctx.key, body: row.body });
      expect(created.status, created.text).to.equal(row.createStatus);
      expect(created.headers.get('traceparent')).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      const done = await waitForTask(ctx.gw.url, `${row.status}/${created.body.task_info.id}`, ctx.key);
      expect(done.body.task_info.status).to.equal('completed');
      expect(done.body[row.field]).to.be.an('array').that.is.not.empty;
      for (const url of done.body[row.field]) {
        const file = await fetch(url);
        expect(file.status, url).to.equal(200);
      }
    });
  }

  it('a sandbox failure ([sandbox:fail]) answers through every async route as a failed task with 3005', async () => {
    const failing: Array<[string, unknown]> = [
      ['/vendors/provider_a/v1/model_a/generation', { prompt: '[sandbox:fail]' }],
      ['/vendors/provider_d/v1/model_d/generation', { prompt: '[sandbox:fail]' }],
      ['/vendors/provider_d/v1/model_g/generation', { first_frame: 'https://example.com/c.png', prompt: '[sandbox:fail]' }],
      ['/vendors/provider_e/v1/model_e/generation', { prompt: '[sandbox:fail]' }],
      ['/vendors/provider_f/v1/model_f/text-to-video/generation', { prompt: '[sandbox:fail]' }],
    ];
    for (const [path, body] of failing) {
      const created = await call(ctx.gw.url, 'POST', path, { key: ctx.key, body });
      const done = await waitForTask(ctx.gw.url, `${path}/${created.body.task_info.id}`, ctx.key);
      expect(done.status).to.equal(200);
      expect(done.body.task_info.status, path).to.equal('failed');
      expect(done.body.task_info.error.code, path).to.equal(3005);
    }
  });

  it('video model A: file and link together are accepted, then fail asynchronously (the sandbox plays the upstream refusal)', async () => {
    const path = '/vendors/provider_a/v1/model_a/generation';
    for (const body of [
      { file: 'https://docs.example.com/brief.pdf', link: 'https://www.example.com/' },
      { file: 'https://docs.example.com/brief.pdf', first_frame: 'https://example.com/cat.png' },
      { link: 'https://www.example.com/', last_frame: 'https://example.com/cat.png' },
    ]) {
      const created = await call(ctx.gw.url, 'POST', path, { key: ctx.key, body });
      expect(created.status).to.equal(200);
      const done = await waitForTask(ctx.gw.url, `${path}/${created.body.task_info.id}`, ctx.key);
      expect(done.status).to.equal(200);
      expect(done.body.task_info.status).to.equal('failed');
      expect(done.body.task_info.error.code).to.equal(3002);
      expect(done.body.task_info.error.detail).to.match(/^The provider refused the request: file and link /);
    }
  });

  for (const path of ['/vendors/provider_c/v1/chat/completions', '/v1/chat/completions']) {
    it(`POST ${path} → 200 chat.completion`, async () => {
      const r = await call(ctx.gw.url, 'POST', path, { key: ctx.key, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] } });
      expect(r.status, r.text.slice(0, 300)).to.equal(200);
      expect(r.body.object).to.equal('chat.completion');
      expect(r.body.choices[0].message.role).to.equal('assistant');
    });
  }
});

// Result URLs whatever shape the upstream spells them in: against a real image-tool upstream
// answering strings, {url} objects, a mix, or garbage, provider_b's image and video routes
// answer the spec's array of URL strings, or fail the task with 3003 naming the field.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { countingImageToolUpstream, type CountingUpstream, type UrlShape } from '../redis/image-tool-upstream.ts';

const ROUTES = [
  { field: 'images', path: '/vendors/provider_b/v1/tob/diffusion', body: { prompt: 'a lighthouse at dawn' } },
  { field: 'videos', path: '/vendors/provider_b/v1/tob/video-diffusion', body: { prompt: 'https://example.com/cat.png the cat blinks', video_type: 0 } },
] as const;

/** Upstream shapes a client must get as plain URL strings. */
const ACCEPTED: Array<[string, UrlShape]> = [
  ['strings', (urls) => urls],
  ['{url} objects', (urls) => urls.map((url) => ({ url }))],
  ['strings and {url} objects mixed', (urls) => urls.map((url, i) => (i % 2 ? { url } : url))],
];

/** Upstream shapes that fail the task with 3003, and what the detail must say. */
const REFUSED: Array<[string, UrlShape, (field: string) => RegExp]> = [
  ['numbers', (urls) => urls.map((_, i) => i), (f) => new RegExp(`${f}\\[0\\] as a number`)],
  ['{href} objects', (urls) => urls.map((href) => ({ href })), (f) => new RegExp(`${f}\\[0\\] as an object without url`)],
  ['{url} objects with a number', (urls) => urls.map((_, i) => ({ url: i })), (f) => new RegExp(`${f}\\[0\\] as an object whose url is a number`)],
  ['a URL in a nested list', (urls) => [urls.slice(0, 1), ...urls.slice(1)], (f) => new RegExp(`${f}\\[0\\] as an array`)],
  ['strings that are not URLs', (urls) => urls.map(() => 'cat.png'), (f) => new RegExp(`${f}\\[0\\] as a string that is not an http\\(s\\) URL`)],
  ['a valid URL after a bad one', (urls) => [...urls, 7], (f) => new RegExp(`${f}\\[\\d\\] as a number`)],
  ['an empty list', () => [], (f) => new RegExp(`has no ${f}\\b`)],
];

describe('result URL fields: strings or {url} objects upstream, strings to the client', () => {
  let up: CountingUpstream;
  let gw: Gateway;
  let key: string;
  before(async () => {
    up = await countingImageToolUpstream().start();
    gw = await startTestGateway({ sandbox: false, only: ['provider_b'], upstreams: { provider_b: { base_url: up.url, credentials: { api_key: 'k' } } } });
    ({ key } = await newTenant(gw));
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  /** Creates a task while the upstream answers `shape`, and waits for it to end. */
  async function run(route: (typeof ROUTES)[number], shape: UrlShape) {
    up.urlShape = shape;
    const created = await call(gw.url, 'POST', route.path, { key, body: route.body });
    expect(created.status, created.text).to.equal(202);
    const done = await waitForTask(gw.url, `${route.path}/${created.body.task_info.id}`, key);
    return { done: done.body, upstreamId: [...up.polls.keys()].at(-1)! }; // tasks run one at a time
  }

  for (const route of ROUTES) {
    for (const [name, shape] of ACCEPTED) {
      it(`${route.field} as ${name} → completed, ${route.field} as URL strings`, async () => {
        const { done, upstreamId } = await run(route, shape);
        expect(done.task_info.status, JSON.stringify(done.task_info.error)).to.equal('completed');
        const ext = route.field === 'images' ? 'png' : 'mp4';
        const count = route.field === 'images' ? 4 : 2;
        expect(done[route.field]).to.deep.equal(Array.from({ length: count }, (_, i) => `https://cdn.example.com/${upstreamId}/${i}.${ext}`));
      });
    }
    it(`${route.field} as one {url} object (not a list) → completed with one URL string`, async () => {
      const { done, upstreamId } = await run(route, (urls) => ({ url: urls[0] }));
      expect(done.task_info.status).to.equal('completed');
      expect(done[route.field]).to.deep.equal([`https://cdn.example.com/${upstreamId}/0.${route.field === 'images' ? 'png' : 'mp4'}`]);
    });
    for (const [name, shape, detail] of REFUSED) {
      it(`${route.field} as ${name} → failed 3003 naming ${route.field}`, async () => {
        const { done } = await run(route, shape);
        expect(done.task_info.status).to.equal('failed');
        expect(done.task_info.error.code).to.equal(3003);
        expect(done.task_info.error.detail).to.match(detail(route.field));
        expect(done[route.field]).to.equal(undefined);
      });
    }
  }
});

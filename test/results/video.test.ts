// A browser plays a result video from the gateway's result host and seeks into it (issue 32):
// Debian's Chromium (playwright-core) loads a WebM (VP9) that a fixture provider served, the
// gateway copied into its local store and now serves with Range requests (206). The fixture,
// test/results/fixtures/seek.webm, is 4 s of ffmpeg's test pattern, VP9 at 160x120, a keyframe
// every second, generated once with:
//   ffmpeg -f lavfi -i testsrc=size=160x120:rate=10 -t 4 -c:v libvpx-vp9 -b:v 60k -g 10 seek.webm
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';
import { launchChromium } from '../console/support.ts';
import { FileHost } from './support.ts';

const E = '/vendors/provider_e/v1/model_e/generation';
const WEBM = readFileSync(new URL('./fixtures/seek.webm', import.meta.url));

describe('result store: Chromium plays and seeks a result video', function () {
  this.timeout(60_000);
  let up: FakeUpstream;
  let files: FileHost;
  let gw: Gateway;
  let browser: Browser;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-video-'));
    files = await new FileHost().start();
    const videoUrl = files.put('/video/seek.webm', { bytes: WEBM, type: 'video/webm' });
    up = new FakeUpstream();
    up.on('POST', '/api/v1/services/aigc/video-generation/video-synthesis', (_req, res) => json(res, 200, { output: { task_id: 'v1', task_status: 'PENDING' } }));
    up.on('GET', '/api/v1/tasks/v1', (_req, res) => json(res, 200, { output: { task_status: 'SUCCEEDED', video_url: videoUrl }, usage: { duration: 4 } }));
    await up.start();
    gw = await startTestGateway({
      sandbox: false, only: ['provider_e'], scale: 0.01,
      upstreams: { provider_e: { base_url: up.url, credentials: { api_key: 'sk-e' } } },
      yaml: `results: { store: local, local: { dir: "${dir}" }, allow_private_cidrs: ["127.0.0.1/32"] }`,
    });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
    await up?.close();
    await files?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('loads the WebM from its result URL, plays it, and seeks to 2.5 s', async () => {
    const { key } = await newTenant(gw);
    const created = await call(gw.url, 'POST', E, { key, body: { prompt: 'a test pattern' } });
    expect(created.status, created.text).to.equal(202);
    const done = await waitForTask(gw.url, `${E}/${created.body.task_info.id}`, key, ['completed', 'failed'], 20_000);
    expect(done.body.task_info.status, done.text).to.equal('completed');
    const url: string = done.body.videos[0];
    expect(url.startsWith(`${gw.url}/results/`)).to.equal(true);

    const page = await browser.newPage();
    const ranges: string[] = [];
    page.on('request', (r) => {
      if (r.url() === url) ranges.push(r.headers().range ?? '(none)');
    });
    const statuses: number[] = [];
    page.on('response', (r) => {
      if (r.url() === url) statuses.push(r.status());
    });
    await page.goto(`${gw.url}/healthz`);
    const played = await page.evaluate(async (src) => {
      const v = document.createElement('video');
      v.muted = true;
      v.preload = 'auto';
      document.body.append(v);
      const once = (name: string) => new Promise<void>((resolve, reject) => {
        v.addEventListener(name, () => resolve(), { once: true });
        v.addEventListener('error', () => reject(new Error(`media error ${v.error?.code}: ${v.error?.message}`)), { once: true });
      });
      v.src = src;
      await once('loadedmetadata');
      const duration = v.duration;
      await v.play();
      await new Promise((r) => setTimeout(r, 300));
      const playedTo = v.currentTime;
      v.pause();
      const seeked = once('seeked');
      v.currentTime = 2.5;
      await seeked;
      return { duration, playedTo, seekedTo: v.currentTime, width: v.videoWidth, height: v.videoHeight, readyState: v.readyState };
    }, url);
    expect(played.duration).to.be.closeTo(4, 0.2);
    expect(played.playedTo).to.be.above(0);
    expect(played.seekedTo).to.be.closeTo(2.5, 0.11);
    expect(played.readyState).to.be.at.least(2);
    expect([played.width, played.height]).to.deep.equal([160, 120]);
    // The browser asked for ranges and the result host answered them.
    expect(ranges.some((r) => r.startsWith('bytes='))).to.equal(true);
    expect(statuses.every((s) => s === 200 || s === 206), statuses.join()).to.equal(true);
    // The provider was asked once (the copy); every byte the browser got came from the result host.
    expect(files.hits.get('/video/seek.webm')!.count, JSON.stringify(await gw.tasks.get(created.body.task_info.id))).to.equal(1);
    await page.close();
  });
});

// The result store end to end (issue 32), on the run's store (memory, or Redis with
// GATEWAY_TEST_STORE=redis) and on both backends (a local directory; S3 through s3rver): real
// fixture upstreams for model D (images) and model E (videos), a real file host for the
// providers' result files, the gateway's own result host. Copy then serve byte-identical;
// Range and HEAD with the security headers; the vendor's key sent only to the hosts its
// descriptor names; expiry then 410, unknown 404; what refused downloads (SSRF, too large, a
// wrong type) and a failing file host do to the task and its billing (docs/results.md).
import { expect } from 'chai';
import { Readable } from 'node:stream';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, ROOT, startTestGateway, STORE_MODE, waitForTask } from '../helpers/gateway.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';
import { metricValue } from '../helpers/metrics.ts';
import { FileHost, randomBytesOf, sha256, TestS3 } from './support.ts';

const D = '/vendors/provider_d/v1/model_d/generation';
const E = '/vendors/provider_e/v1/model_e/generation';
const VENDOR_KEY = 'sk-e-upstream';

/** provider_d as shipped; provider_e with its result files behind the vendor's key on host `localhost`. */
function vendorsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-results-'));
  for (const v of ['provider_d', 'provider_e']) cpSync(join(ROOT, `vendors/${v}`), join(dir, v), { recursive: true });
  cpSync(join(ROOT, 'vendors/provider_d.yaml'), join(dir, 'provider_d.yaml'));
  const e = readFileSync(join(ROOT, 'vendors/provider_e.yaml'), 'utf8');
  const anchor = '    result:\n      videos: output.video_url\n';
  expect(e).to.contain(anchor);
  writeFileSync(join(dir, 'provider_e.yaml'), e.replace(anchor, `${anchor}    result_download: { auth_hosts: [localhost] }\n`));
  return dir;
}

/** The upstream of both models: a task's final answer carries the file URLs the test chose. */
function upstream(results: Map<string, string[]>): FakeUpstream {
  const up = new FakeUpstream();
  let seq = 0;
  const byId = new Map<string, { kind: 'd' | 'e'; urls: string[] }>();
  const accept = (kind: 'd' | 'e') => (req: { body: any }, res: Parameters<typeof json>[0]) => {
    const id = `up-${++seq}`;
    byId.set(id, { kind, urls: results.get(req.body.input.prompt) ?? [] });
    json(res, 200, { request_id: `r-${id}`, output: { task_id: id, task_status: 'PENDING' } });
  };
  up.on('POST', '/api/v1/services/aigc/text2image/image-synthesis', accept('d'));
  up.on('POST', '/api/v1/services/aigc/video-generation/video-synthesis', accept('e'));
  up.on('GET', /^\/api\/v1\/tasks\/[^/]+$/, (req, res) => {
    const t = byId.get(req.path.split('/')[4]!);
    if (!t) return json(res, 404, { code: 'NotFound' });
    if (t.kind === 'd') return json(res, 200, { output: { task_status: 'SUCCEEDED', results: t.urls.map((url) => ({ url })) }, usage: { image_count: t.urls.length } });
    json(res, 200, { output: { task_status: 'SUCCEEDED', video_url: t.urls[0] }, usage: { duration: 5 } });
  });
  return up;
}

for (const backend of ['local', 's3'] as const) {
  describe(`result store: ${backend} backend (${STORE_MODE} store)`, function () {
    this.timeout(60_000);
    let up: FakeUpstream;
    let files: FileHost;
    let s3: TestS3 | undefined;
    let gw: Gateway;
    let dir: string;
    let dataDir: string;
    const results = new Map<string, string[]>();
    let n = 0;

    async function start(extra = ''): Promise<Gateway> {
      const store = backend === 's3' ? `store: s3, ${s3!.yaml()}` : `store: local, local: { dir: "${dataDir}" }`;
      return startTestGateway({
        sandbox: false, vendorsDir: dir, scale: 0.01,
        upstreams: { provider_d: { base_url: up.url, credentials: { api_key: 'sk-d' } }, provider_e: { base_url: up.url, credentials: { api_key: VENDOR_KEY } } },
        yaml: `results: { ${store}, allow_private_cidrs: ["127.0.0.1/32"], max_file_bytes: 3000000${extra} }`,
      });
    }

    before(async () => {
      dir = vendorsDir();
      dataDir = mkdtempSync(join(tmpdir(), 'gw-result-files-'));
      up = await upstream(results).start();
      files = await new FileHost().start();
      if (backend === 's3') s3 = await new TestS3().start();
      gw = await start();
    });
    after(async () => {
      await gw?.close();
      await up?.close();
      await files?.close();
      await s3?.close();
      rmSync(dir, { recursive: true, force: true });
      rmSync(dataDir, { recursive: true, force: true });
    });

    /** A task of `path` whose provider answers with `urls`; resolves once it is terminal. */
    async function run(path: string, urls: string[], key: string, g = gw) {
      const prompt = `task ${++n} of ${backend}`;
      results.set(prompt, urls);
      const created = await call(g.url, 'POST', path, { key, body: path === D ? { prompt, n: urls.length || 1 } : { prompt } });
      expect(created.status, created.text).to.equal(202);
      return waitForTask(g.url, `${path}/${created.body.task_info.id}`, key, ['completed', 'failed'], 20_000);
    }

    it('copies images and a video, serves them byte-identical from the result host, settles once', async () => {
      const { tenant, key } = await newTenant(gw);
      const png = randomBytesOf(70_000);
      const jpg = randomBytesOf(1234);
      const a = files.put(`/d/${n}/a.png`, { bytes: png, type: 'image/png' });
      const b = files.put(`/d/${n}/b.jpg`, { bytes: jpg, type: 'image/jpeg; charset=binary' });
      const done = await run(D, [a, b], key);
      expect(done.body.task_info.status, done.text).to.equal('completed');
      const urls: string[] = done.body.images;
      expect(urls).to.have.length(2);
      for (const u of urls) expect(u.startsWith(`${gw.url}/results/${done.body.task_info.id}/`), u).to.equal(true);
      expect(urls[0]).to.match(/\/images-0\.png$/);
      expect(urls[1]).to.match(/\/images-1\.jpg$/);
      expect(Date.parse(done.body.results_expire_at) - Date.now()).to.be.within(167 * 3600_000, 168 * 3600_000 + 1000);
      const got = await fetch(urls[0]!);
      expect(got.status).to.equal(200);
      expect(sha256(Buffer.from(await got.arrayBuffer()))).to.equal(sha256(png));
      expect(got.headers.get('content-type')).to.equal('image/png');
      expect(got.headers.get('content-length')).to.equal(String(png.length));
      expect(got.headers.get('x-content-type-options')).to.equal('nosniff');
      expect(got.headers.get('content-security-policy')).to.equal('sandbox');
      expect(got.headers.get('content-disposition')).to.equal('inline; filename="images-0.png"');
      expect(got.headers.get('cache-control')).to.match(/^private, max-age=\d+$/);
      expect(got.headers.get('etag')).to.match(/^"/);
      const second = await fetch(urls[1]!);
      expect(Buffer.from(await second.arrayBuffer()).equals(jpg)).to.equal(true);
      expect(second.headers.get('content-type')).to.equal('image/jpeg');
      // Billed once, for the two images delivered.
      const ledger = (await gw.billing.listLedger(tenant.id, { limit: 50 })).entries.filter((e) => e.ref === done.body.task_info.id).map((e) => e.kind);
      expect(ledger.filter((k) => k === 'settle')).to.have.length(1);
      expect(await gw.billing.checkInvariant(tenant.id)).to.include({ ok: true });
      // The tenant's storage use counts them (the usage API the console reads).
      const usage = await call(gw.url, 'GET', '/v1/usage', { key });
      expect(usage.status, usage.text).to.equal(200);
      expect(usage.body.storage).to.deep.equal({ files: 2, bytes: png.length + jpg.length });
    });

    it('puts the result host\'s URLs in the task.succeeded event (what webhooks deliver)', async () => {
      const { tenant, key } = await newTenant(gw);
      const seen: Array<{ type: string; data: any }> = [];
      gw.bus.subscribe((e) => {
        if (e.tenant_id === tenant.id) seen.push(e);
      });
      const done = await run(D, [files.put(`/d/${n}/event.png`, { bytes: randomBytesOf(100), type: 'image/png' })], key);
      expect(done.body.task_info.status, done.text).to.equal('completed');
      // The event follows the terminal transition the GET already shows (engine/tasks/ending.ts):
      // on Redis a poll can read `completed` a moment before the event is published.
      const deadline = Date.now() + 5_000;
      while (!seen.some((e) => e.type === 'task.succeeded') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const succeeded = seen.find((e) => e.type === 'task.succeeded');
      expect(succeeded, JSON.stringify(seen.map((e) => e.type))).to.not.equal(undefined);
      expect(succeeded!.data.payload.images).to.deep.equal(done.body.images);
      expect(succeeded!.data.payload.results_expire_at).to.equal(done.body.results_expire_at);
    });

    if (backend === 's3') {
      it('answers with a presigned redirect when results.s3.presign is on', async () => {
        const presigning = await startTestGateway({
          sandbox: false, vendorsDir: dir, scale: 0.01,
          upstreams: { provider_d: { base_url: up.url, credentials: { api_key: 'sk-d' } }, provider_e: { base_url: up.url, credentials: { api_key: VENDOR_KEY } } },
          yaml: `results: { store: s3, ${s3!.yaml(', presign: true')}, allow_private_cidrs: ["127.0.0.1/32"] }`,
        });
        try {
          const { key } = await newTenant(presigning);
          const png = randomBytesOf(30_000);
          const done = await run(D, [files.put(`/d/${n}/presigned.png`, { bytes: png, type: 'image/png' })], key, presigning);
          const redirect = await fetch(done.body.images[0], { redirect: 'manual' });
          expect(redirect.status).to.equal(302);
          const location = redirect.headers.get('location')!;
          expect(location.startsWith(s3!.endpoint)).to.equal(true);
          expect(location).to.contain('X-Amz-Signature=');
          const object = await fetch(location, { headers: { range: 'bytes=0-99' } });
          expect(object.status).to.equal(206);
          expect(Buffer.from(await object.arrayBuffer()).equals(png.subarray(0, 100))).to.equal(true);
          expect(Buffer.from(await (await fetch(done.body.images[0])).arrayBuffer()).equals(png)).to.equal(true);
        } finally {
          await presigning.close();
        }
      });
    }

    it('answers Range (206) and HEAD, 304 on a matching ETag, 416 outside the file', async () => {
      const { key } = await newTenant(gw);
      const webm = randomBytesOf(200_000);
      const done = await run(E, [files.put(`/open/${n}.webm`, { bytes: webm, type: 'video/webm' })], key);
      expect(done.body.task_info.status, done.text).to.equal('completed');
      const url: string = done.body.videos[0];
      const part = await fetch(url, { headers: { range: 'bytes=1000-1999' } });
      expect(part.status).to.equal(206);
      expect(part.headers.get('content-range')).to.equal(`bytes 1000-1999/${webm.length}`);
      expect(Buffer.from(await part.arrayBuffer()).equals(webm.subarray(1000, 2000))).to.equal(true);
      const tail = await fetch(url, { headers: { range: 'bytes=-10' } });
      expect(Buffer.from(await tail.arrayBuffer()).equals(webm.subarray(-10))).to.equal(true);
      const head = await fetch(url, { method: 'HEAD' });
      expect(head.status).to.equal(200);
      expect(head.headers.get('content-length')).to.equal(String(webm.length));
      expect(head.headers.get('accept-ranges')).to.equal('bytes');
      expect(head.headers.get('content-type')).to.equal('video/webm');
      const again = await fetch(url, { headers: { 'if-none-match': head.headers.get('etag')! } });
      expect(again.status).to.equal(304);
      const outside = await fetch(url, { headers: { range: `bytes=${webm.length + 5}-` } });
      expect(outside.status).to.equal(416);
      expect(outside.headers.get('content-range')).to.equal(`bytes */${webm.length}`);
      expect(outside.headers.get('traceparent')).to.match(/^00-/);
    });

    it("sends the vendor's key to the hosts its descriptor names, and only there", async () => {
      const { key } = await newTenant(gw);
      const mp4 = randomBytesOf(50_000);
      const path = `/veo/${n}.mp4`;
      files.put(path, { bytes: mp4, type: 'video/mp4', key: `Bearer ${VENDOR_KEY}` });
      const done = await run(E, [files.url(path, 'localhost')], key);
      expect(done.body.task_info.status, done.text).to.equal('completed');
      expect(Buffer.from(await (await fetch(done.body.videos[0])).arrayBuffer()).equals(mp4)).to.equal(true);
      // The same file on an address the descriptor does not name: no key sent, so the host refuses (403 → 4012).
      const other = await run(E, [files.url(path)], key);
      expect(other.body.task_info.status).to.equal('failed');
      expect(other.body.task_info.error.code).to.equal(4012);
      expect(files.hits.get(path)!.auth).to.deep.equal([`Bearer ${VENDOR_KEY}`, undefined]);
    });

    it('answers 404 for an unknown file or a wrong secret, with a problem and a Traceparent', async () => {
      const { key } = await newTenant(gw);
      const done = await run(D, [files.put(`/d/${n}/x.png`, { bytes: randomBytesOf(10), type: 'image/png' })], key);
      const url = new URL(done.body.images[0]);
      const [, , id, token, name] = url.pathname.split('/');
      for (const path of [`/results/${id}/${token}x/${name}`, `/results/${id}/${token}/images-9.png`, `/results/00000000-0000-4000-8000-000000000000/${token}/${name}`]) {
        const r = await call(gw.url, 'GET', path);
        expect(r.status, path).to.equal(404);
        expect(r.headers.get('content-type')).to.equal('application/problem+json');
        expect(r.body.error_code).to.equal(2005);
        expect(r.headers.get('traceparent')).to.match(/^00-/);
      }
    });

    it('fails the task with 4012, unbilled, for an oversized file, a wrong content type and refused addresses', async () => {
      const { tenant, key } = await newTenant(gw);
      const cases: Array<[string, string, string]> = [
        [files.put(`/big/${n}.png`, { bytes: randomBytesOf(3_000_001), type: 'image/png' }), 'too_large', 'over the 3000000-byte limit'],
        [files.put(`/big-chunked/${n}.png`, { bytes: randomBytesOf(3_100_000), type: 'image/png', chunked: true }), 'too_large', 'over the 3000000-byte limit'],
        [files.put(`/html/${n}.png`, { bytes: Buffer.from('<script>alert(1)</script>'), type: 'text/html' }), 'content_type', '"text/html"'],
        [`http://127.0.0.2:${files.port}/x.png`, 'refused_address', 'loopback'],
        ['http://169.254.169.254/latest/meta-data/iam', 'refused_address', 'link-local'],
        [`http://[::ffff:127.0.0.2]:${files.port}/x.png`, 'refused_address', 'loopback'],
        [files.put(`/hop/${n}.png`, { bytes: Buffer.alloc(0), type: 'image/png', redirect: 'http://10.1.2.3/inside.png' }), 'refused_address', 'private'],
      ];
      for (const [url, reason, words] of cases) {
        const before = metricValue(await (await fetch(gw.metricsUrl!)).text(), 'gateway_result_copy_failures_total', { vendor: 'provider_d', reason });
        const done = await run(D, [url], key);
        expect(done.body.task_info.status, url).to.equal('failed');
        expect(done.body.task_info.error.code, url).to.equal(4012);
        expect(done.body.task_info.error.detail, url).to.contain(words);
        expect(done.body.images, url).to.equal(undefined);
        expect(metricValue(await (await fetch(gw.metricsUrl!)).text(), 'gateway_result_copy_failures_total', { vendor: 'provider_d', reason })).to.equal(before + 1);
      }
      const ledger = (await gw.billing.listLedger(tenant.id, { limit: 100 })).entries.map((e) => e.kind);
      expect(ledger).to.not.include('settle');
      expect(await gw.billing.checkInvariant(tenant.id)).to.include({ ok: true });
      expect(await gw.results!.storageUse(tenant.id)).to.deep.equal({ files: 0, bytes: 0 });
    });

    it('retries a copy that fails for a while (HTTP 503), then completes once', async () => {
      const { tenant, key } = await newTenant(gw);
      const png = randomBytesOf(5000);
      const url = files.put(`/flaky/${n}.png`, { bytes: png, type: 'image/png', failFirst: 3 });
      const done = await run(D, [url], key);
      expect(done.body.task_info.status, done.text).to.equal('completed');
      expect(files.hits.get(new URL(url).pathname)!.count).to.equal(4);
      expect(Buffer.from(await (await fetch(done.body.images[0])).arrayBuffer()).equals(png)).to.equal(true);
      const ledger = (await gw.billing.listLedger(tenant.id, { limit: 50 })).entries.filter((e) => e.kind === 'settle');
      expect(ledger).to.have.length(1);
    });

    it('expires the URLs with the retention (410), and the sweep deletes the files', async () => {
      const short = await start(', retention_hours: 0.0005, sweep_interval_ms: 20000');
      try {
        const { tenant, key } = await newTenant(short);
        const png = randomBytesOf(4000);
        const done = await run(D, [files.put(`/short/${n}.png`, { bytes: png, type: 'image/png' })], key, short);
        expect(done.body.task_info.status, done.text).to.equal('completed');
        const url: string = done.body.images[0];
        expect((await fetch(url)).status).to.equal(200);
        expect(await short.results!.storageUse(tenant.id)).to.deep.equal({ files: 1, bytes: 4000 });
        // A ledger archive segment on the same backend, as old as the file: money, never swept.
        const segment = `ledger/${tenant.id}/2026-01-01/0000000000000001`;
        await short.results!.backend.put(segment, Readable.from(['{"seq":1}\n']), 'application/x-ndjson');
        await new Promise((r) => setTimeout(r, 2000));
        const gone = await call(url, 'GET', '');
        expect(gone.status).to.equal(410);
        expect(gone.headers.get('content-type')).to.equal('application/problem+json');
        expect(gone.headers.get('traceparent')).to.match(/^00-/);
        expect(gone.body.title).to.equal('Gone');
        // The task read keeps its URL arrays and the expiry.
        const read = await call(short.url, 'GET', `${D}/${done.body.task_info.id}`, { key });
        expect(read.body.images).to.deep.equal([url]);
        expect(Date.parse(read.body.results_expire_at)).to.be.below(Date.now());
        // The sweep (every 200 ms here) deletes the file itself.
        for (let i = 0; i < 50 && (await short.results!.storageUse(tenant.id)).files > 0; i++) await new Promise((r) => setTimeout(r, 100));
        expect(await short.results!.storageUse(tenant.id)).to.deep.equal({ files: 0, bytes: 0 });
        expect((await fetch(url)).status).to.equal(410);
        expect(await short.results!.backend.stat(segment), 'the sweep leaves ledger/ alone').to.not.equal(undefined);
      } finally {
        await short.close();
      }
    });
  });
}

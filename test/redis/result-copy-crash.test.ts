// Redis mode: a gateway process killed with SIGKILL in the middle of copying a task's result
// file (issue 32). The copy is re-driven by another process (the sweep, then the poll job that
// the dead process held), writes the same key, and the task completes exactly once with one
// settlement; the file served is the provider's, byte for byte, and no partial file is served.
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis } from '../helpers/redis.ts';
import { call } from '../helpers/gateway.ts';
import { FileHost, randomBytesOf, sha256 } from '../results/support.ts';
import { countingImageToolUpstream } from './image-tool-upstream.ts';
import { admin, spawnGateway, tenantWithKey, writeConfig } from './support.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('redis mode: kill -9 during a result copy', function () {
  this.timeout(120_000);

  it('completes the task once, settles once, and serves the whole file', async () => {
    const redis = await startRedis();
    const files = await new FileHost().start();
    const up = countingImageToolUpstream();
    await up.start();
    const dir = mkdtempSync(join(tmpdir(), 'gw-crash-results-'));
    // 4 MB sent in 64 KB chunks 40 ms apart: a copy takes about 2.5 s, time to kill it midway.
    // Scale 0.1: a 60 s deadline, room for the dead process's poll job to be found stalled (its lock, 30 s) and run again.
    const png = randomBytesOf(4 * 1024 * 1024);
    const fileUrl = files.put('/slow.png', { bytes: png, type: 'image/png', delayMs: 40 });
    up.urlShape = () => [fileUrl];
    const config = writeConfig({ redisUrl: redis.url, prefix: 'rc', upstreamUrl: up.url, scale: 0.1, results: `{ store: local, local: { dir: "${dir}" }, allow_private_cidrs: ["127.0.0.1/32"] }` });
    let a = await spawnGateway(config, 'all');
    let b: Awaited<ReturnType<typeof spawnGateway>> | undefined;
    try {
      const { tenantId, key } = await tenantWithKey(a.url);
      const created = await call(a.url, 'POST', IMAGES, { key, body: { prompt: 'a slow file' } });
      expect(created.status, created.text).to.equal(202);
      const id: string = created.body.task_info.id;
      // The copy has started when the file host has sent part of the file.
      for (let i = 0; !files.hits.get('/slow.png'); i++) {
        if (i > 400) throw new Error('the copy never started');
        await sleep(25);
      }
      await sleep(600);
      await a.kill9();
      const midway = await call(`http://127.0.0.1:${new URL(a.url).port}`, 'GET', `${IMAGES}/${id}`, { key }).catch(() => undefined);
      expect(midway).to.equal(undefined); // the process is gone
      b = await spawnGateway(config, 'all');
      let task: any;
      for (let i = 0; ; i++) {
        task = (await call(b.url, 'GET', `${IMAGES}/${id}`, { key })).body;
        if (task.task_info.status === 'completed' || task.task_info.status === 'failed') break;
        if (i > 2400) throw new Error(`task still ${task.task_info.status}`);
        await sleep(25);
      }
      expect(task.task_info.status, JSON.stringify(task)).to.equal('completed');
      expect(files.hits.get('/slow.png')!.count).to.be.at.least(2);
      const url: string = task.images[0];
      expect(url.startsWith(`http://127.0.0.1:`)).to.equal(true);
      const got = await fetch(url.replace(/^http:\/\/[^/]+/, b.url));
      expect(got.status).to.equal(200);
      expect(sha256(Buffer.from(await got.arrayBuffer()))).to.equal(sha256(png));
      // One hold, one settlement (one image of the four held for is billed; the rest released once).
      await sleep(500);
      const page: { data: Array<{ ref: string; kind: string }> } = await admin(b.url, 'GET', `/tenants/${tenantId}/wallet/ledger?limit=200`);
      expect(page.data.filter((e) => e.ref === id).map((e) => e.kind).sort()).to.deep.equal(['hold', 'release', 'settle']);
    } finally {
      await b?.stop();
      if (a.proc.exitCode === null && a.proc.signalCode === null) await a.stop();
      await up.close();
      await files.close();
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

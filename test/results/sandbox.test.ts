// The sandbox's simulated results go through the result store (issue 32, item 7): the copy
// downloads the sandbox's placeholder files from its own address (the one exception to the
// download address rules) and the result host serves them, as the README's walk-through shows.
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Gateway } from '../../engine/gateway.ts';
import { call, DEMO_KEY, startTestGateway, STORE_MODE, waitForTask } from '../helpers/gateway.ts';

describe(`result store: the sandbox's results (${STORE_MODE} store)`, function () {
  this.timeout(30_000);
  let gw: Gateway;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-sandbox-results-'));
    gw = await startTestGateway({ sandbox: true, scale: 0.01, only: ['provider_d', 'provider_e'], yaml: `results: { store: local, local: { dir: "${dir}" } }` });
  });
  after(async () => {
    await gw?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves an image and a video of sandbox tasks from the result host', async () => {
    for (const [path, body, field, type] of [
      ['/vendors/provider_d/v1/model_d/generation', { prompt: 'a red fox in snow', n: 2 }, 'images', 'image/png'],
      ['/vendors/provider_e/v1/model_e/generation', { prompt: 'clouds over mountains' }, 'videos', 'video/mp4'],
    ] as const) {
      const created = await call(gw.url, 'POST', path, { key: DEMO_KEY, body });
      expect(created.status, created.text).to.equal(202);
      const done = await waitForTask(gw.url, `${path}/${created.body.task_info.id}`, DEMO_KEY, ['completed', 'failed'], 20_000);
      expect(done.body.task_info.status, done.text).to.equal('completed');
      expect(done.body.results_expire_at).to.be.a('string');
      for (const url of done.body[field] as string[]) {
        expect(url.startsWith(`${gw.url}/results/`), url).to.equal(true);
        const file = await fetch(url);
        expect(file.status).to.equal(200);
        expect(file.headers.get('content-type')).to.equal(type);
        expect((await file.arrayBuffer()).byteLength).to.be.above(0);
      }
    }
  });
});

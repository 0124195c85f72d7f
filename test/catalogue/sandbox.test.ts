// Every catalogue entry, enabled by name in a config like the shipped one (sandbox on, no
// upstreams), plays its fixtures in the sandbox: each async route's first example runs to
// completed, [sandbox:fail] to failed, and each proxied route answers its fixture. This is the
// walk-through of docs/adding-a-provider.md, run.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { Gateway } from '../../engine/gateway.ts';
import { call, DEMO_KEY, ROOT, startTestGateway, waitForTask } from '../helpers/gateway.ts';

const CATALOGUE = ['replicate', 'fal', 'runway', 'luma', 'veo', 'openai', 'openrouter'];

describe('catalogue: each entry plays in the sandbox', function () {
  this.timeout(60_000);
  let gw: Gateway;
  before(async () => {
    gw = await startTestGateway({ only: CATALOGUE });
  });
  after(() => gw?.close());

  for (const vendor of CATALOGUE) {
    const d = parse(readFileSync(`${ROOT}vendors/${vendor}.yaml`, 'utf8'));
    for (const r of d.routes) {
      const path = `/vendors/${vendor}${r.path}`;
      if (r.kind === 'async') {
        it(`${vendor}/${r.id}: its first example completes; with [sandbox:fail] it fails`, async () => {
          const example = r.request.examples[0];
          // `prompt`, else the first field named for it (the provider's own name: Runway's promptText).
          const promptField = 'prompt' in example ? 'prompt' : Object.keys(example).find((k) => /prompt|text/i.test(k));
          expect(typeof example[promptField!], 'a prompt is text').to.equal('string');
          expect(example[promptField!]).not.to.match(/^(https?:|data:)/);
          expect(promptField, 'the first example carries its prompt in a field named for it').to.be.a('string');
          const created = await call(gw.url, 'POST', path, { key: DEMO_KEY, body: example });
          expect(created.status, created.text).to.equal(r.status);
          const done = await waitForTask(gw.url, `${path}/${created.body.task_info.id}`, DEMO_KEY);
          expect(done.body.task_info.status, JSON.stringify(done.body)).to.equal('completed');
          const failing = await call(gw.url, 'POST', path, { key: DEMO_KEY, body: { ...example, [promptField!]: `${example[promptField!]} [sandbox:fail]` } });
          const failed = await waitForTask(gw.url, `${path}/${failing.body.task_info.id}`, DEMO_KEY);
          expect(failed.body.task_info.status).to.equal('failed');
          expect(failed.body.task_info.error.code).to.be.within(3000, 3005);
        });
      } else if (r.request?.examples) {
        it(`${vendor}/${r.id}: its first example is answered from the fixture`, async () => {
          const res = await call(gw.url, r.method, path, { key: DEMO_KEY, body: r.request.examples[0] });
          expect(res.status, res.text).to.equal(200);
        });
      }
    }
  }
});

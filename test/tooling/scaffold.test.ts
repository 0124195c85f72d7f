// `gateway new-vendor`: what it writes passes `check` and runs in the sandbox at once; routes
// lists it with its price; and it refuses names and styles it cannot serve.
import { expect } from 'chai';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Gateway } from '../../engine/gateway.ts';
import { renderRouteTable, routeTable } from '../../engine/tooling/routes.ts';
import { folderSet } from '../../engine/tooling/sources.ts';
import { call, DEMO_KEY, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { cleanTempDirs, cli, ROOT, tempDir, vendorsDir } from './support.ts';

describe('gateway new-vendor', () => {
  after(cleanTempDirs);

  it('writes a descriptor and fixtures, and checks them (CLI)', () => {
    const dir = tempDir();
    const r = cli(['new-vendor', 'acme', '--style', 'async', '--dir', dir]);
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/check: ok \(1 route\(s\), 0 warning\(s\)\)/);
    for (const f of ['acme.yaml', ...['created', 'queued', 'running', 'succeeded', 'failed'].map((s) => `acme/fixtures/generation/${s}.json`)]) {
      expect(existsSync(join(dir, f)), f).to.equal(true);
    }
    expect(readFileSync(join(dir, 'acme.yaml'), 'utf8')).to.match(/^# acme: scaffolded by `gateway new-vendor acme --style async`/);
  });

  it("enables what it scaffolds into the config's folder: one more name in vendors.enabled, the rest of the file as it was", () => {
    const dir = tempDir();
    cpSync(join(ROOT, 'vendors'), join(dir, 'vendors'), { recursive: true });
    const shipped = readFileSync(join(ROOT, 'config.yaml'), 'utf8');
    writeFileSync(join(dir, 'config.yaml'), shipped);
    const r = cli(['new-vendor', 'acme'], { cwd: dir });
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^enabled acme in config\.yaml \(vendors\.enabled\)$/m);
    const after = readFileSync(join(dir, 'config.yaml'), 'utf8');
    expect(after).to.equal(shipped.replace('provider_f]', 'provider_f, acme]'));
    expect(cli(['new-vendor', 'acme', '--force'], { cwd: dir }).stdout).not.to.match(/enabled acme/);
    expect(readFileSync(join(dir, 'config.yaml'), 'utf8')).to.equal(after);
    // A scaffold elsewhere (--dir) leaves the config alone.
    cli(['new-vendor', 'other', '--dir', tempDir()], { cwd: dir });
    expect(readFileSync(join(dir, 'config.yaml'), 'utf8')).to.equal(after);
  });

  it('refuses to overwrite, a name that cannot be a path segment, and an unknown style', () => {
    const dir = tempDir();
    expect(cli(['new-vendor', 'acme', '--dir', dir]).status).to.equal(0);
    const again = cli(['new-vendor', 'acme', '--dir', dir]);
    expect(again.status).to.equal(2);
    expect(again.stderr).to.match(/acme\.yaml already exists \(--force overwrites it\)/);
    expect(cli(['new-vendor', 'acme', '--dir', dir, '--force']).status).to.equal(0);
    expect(cli(['new-vendor', 'Acme-Inc', '--dir', dir]).stderr).to.match(/must match/);
    expect(cli(['new-vendor', 'acme2', '--style', 'batch', '--dir', dir]).stderr).to.match(/--style must be one of async, sync, stream/);
  });

  it('routes: lists the scaffold with its kind, success status and example prices', async () => {
    const dir = vendorsDir([{ name: 'acme' }, { name: 'acme_chat', style: 'stream' }]);
    const rows = await routeTable([...folderSet(dir).vendors.values()].map((v) => v.descriptor));
    expect(rows.map((r) => [r.method, r.path, r.kind, r.status])).to.deep.equal([
      ['POST', '/vendors/acme/v1/generation', 'async', 202],
      ['GET', '/vendors/acme/v1/generation/{task_id}', 'task', 200],
      ['POST', '/vendors/acme/v1/generation/{task_id}/cancel', 'cancel', 200],
      ['POST', '/vendors/acme_chat/v1/chat/completions', 'stream', 200],
    ]);
    expect(rows[0]!.price).to.equal('1024*1024 0.04, 1280*720 0.05, 720*1280 0.05 USD per image; examples: 0.04 USD (4.00 credits) to 0.20 USD (20.00 credits)');
    expect(rows[3]!.price).to.match(/^by tokens, USD per 1M input\/output: acme-chat-chat-1 0.10\/0.40/);
    const md = renderRouteTable(rows, 'markdown');
    expect(md.split('\n')[0]).to.equal('| Method | Path | Kind | Vendor | Route | Status | Price |');
    const text = cli(['routes', dir]);
    expect(text.status).to.equal(0);
    expect(text.stdout).to.match(/^METHOD\s+PATH\s+KIND\s+VENDOR\s+ROUTE\s+STATUS\s+PRICE\n/);
  });

  describe('runs in the sandbox at once', () => {
    let gw: Gateway;
    before(async () => {
      gw = await startTestGateway({ vendorsDir: vendorsDir([{ name: 'acme' }, { name: 'acme_sync', style: 'sync' }, { name: 'acme_chat', style: 'stream' }]) });
    });
    after(() => gw?.close());

    it('an async task goes pending → completed with the fixture\'s image', async () => {
      const created = await call(gw.url, 'POST', '/vendors/acme/v1/generation', { key: DEMO_KEY, body: { prompt: 'a red bicycle', n: 2 } });
      expect(created.status, created.text).to.equal(202);
      expect(created.body.task_info.status).to.equal('pending');
      const done = await waitForTask(gw.url, `/vendors/acme/v1/generation/${created.body.task_info.id}`, DEMO_KEY);
      expect(done.body.task_info.status).to.equal('completed');
      expect(done.body.images).to.have.length(1);
      expect(done.body.images[0]).to.match(/^http:\/\/127\.0\.0\.1:\d+\/_files\/.+\/0\.png$/);
    });

    it('[sandbox:fail] fails it through the scaffold\'s error map (3005)', async () => {
      const created = await call(gw.url, 'POST', '/vendors/acme/v1/generation', { key: DEMO_KEY, body: { prompt: 'a red bicycle [sandbox:fail]' } });
      const done = await waitForTask(gw.url, `/vendors/acme/v1/generation/${created.body.task_info.id}`, DEMO_KEY);
      expect(done.body.task_info.status).to.equal('failed');
      expect(done.body.task_info.error.code).to.equal(3005);
      expect(done.body.task_info.error.detail).to.contain('rejected by content inspection');
    });

    it('the sync and stream scaffolds are served and validate their requests', async () => {
      const missing = await call(gw.url, 'POST', '/vendors/acme_sync/v1/embeddings', { key: DEMO_KEY, body: { model: 'acme-sync-embed-1' } });
      expect(missing.status).to.equal(400);
      expect(missing.body.error_code).to.equal(2002);
      const bad = await call(gw.url, 'POST', '/vendors/acme_chat/v1/chat/completions', { key: DEMO_KEY, body: { model: 'acme-chat-chat-1', messages: [] } });
      expect(bad.status).to.equal(400);
      expect(bad.body.error_code).to.equal(2003);
    });
  });
});

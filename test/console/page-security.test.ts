// The console pages' side of the security rules (docs/console-api.md, "Pages"): the CSP and
// security headers on every console answer, no file outside console/ reachable, and what a
// tenant typed shown as text in a real browser. (Cookies, CSRF and tenant isolation are the
// console API's: see its own tests.)
import { expect } from 'chai';
import express from 'express';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { errorHandler } from '../../engine/http/answer.ts';
import { CONSOLE_CSP, consolePagesRouter } from '../../engine/http/console-pages.ts';
import type { Gateway } from '../../engine/gateway.ts';
import { createLogger } from '../../engine/log/logger.ts';
import { notFound } from '../../engine/http/route-table.ts';
import { call, DEMO_KEY, startTestGateway } from '../helpers/gateway.ts';
import { ARTIFACTS, launchChromium } from './support.ts';

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

function expectSecurityHeaders(headers: Headers, what: string, csp = CONSOLE_CSP): void {
  for (const [name, value] of Object.entries({ ...SECURITY_HEADERS, 'content-security-policy': csp })) expect(headers.get(name), `${name} on ${what}`).to.equal(value);
  expect(headers.get('content-security-policy')).to.contain("frame-ancestors 'none'");
}

const TRAVERSALS = [
  '/console/assets/..%2F..%2Fpackage.json',
  '/console/assets/pages/..%2F..%2F..%2Fpackage.json',
  '/console/assets/..%2F..%2Fengine%2Fhttp%2Fconsole-pages.ts',
  '/console/assets/%2Fetc%2Fpasswd.js',
  '/console/assets/index.html',
  '/console/assets/.hidden.js',
];

describe('console pages: the static router', () => {
  let server: Server;
  let base: string;
  before(async () => {
    const app = express();
    app.use((_req, res, next) => {
      res.locals.trace = { traceId: '0'.repeat(32) };
      next();
    });
    app.use(consolePagesRouter());
    app.use((req) => {
      throw notFound(req.method, req.path);
    });
    app.use(errorHandler(createLogger('silent')));
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('answers the app shell on /console and its client-side routes, with the security headers', async () => {
    for (const path of ['/console', '/console/', '/console/keys', '/console/tasks/abc', '/console/operator/tenants/x', '/console/a/b/c/d']) {
      const r = await fetch(base + path);
      expect(r.status, path).to.equal(200);
      expect(r.headers.get('content-type')).to.match(/^text\/html/);
      expect(r.headers.get('cache-control')).to.equal('no-cache');
      expectSecurityHeaders(r.headers, path);
      const text = await r.text();
      expect(text).to.contain('<script type="module" src="/console/assets/app.js">');
      expect(text, 'no inline script or style').not.to.match(/<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=/);
    }
  });

  it('serves the app files with their types, not cached; the library immutable at a versioned URL', async () => {
    const app = await fetch(`${base}/console/assets/app.js`);
    expect(app.status).to.equal(200);
    expect(app.headers.get('content-type')).to.equal('text/javascript; charset=utf-8');
    expect(app.headers.get('cache-control')).to.equal('no-cache');
    expectSecurityHeaders(app.headers, 'app.js');
    const ranged = await fetch(`${base}/console/assets/app.js`, { headers: { range: 'bytes=99999999-' } });
    expect(ranged.status, 'a Range header is ignored, never a 416 outside the problem format').to.equal(200);
    const head = await fetch(`${base}/console/keys`, { method: 'HEAD' });
    expect(head.status).to.equal(200);
    expectSecurityHeaders(head.headers, 'HEAD /console/keys');
    const css = await fetch(`${base}/console/assets/style.css`);
    expect(css.headers.get('content-type')).to.equal('text/css; charset=utf-8');
    const page = await fetch(`${base}/console/assets/pages/keys.js`);
    expect(page.status).to.equal(200);
    const lib = await (await fetch(`${base}/console/assets/lib.js`)).text();
    const vendor = /from '\.\/(vendor\/htm-[0-9.]+\.js)'/.exec(lib)?.[1];
    expect(vendor, lib).to.be.a('string');
    const v = await fetch(`${base}/console/assets/${vendor}`);
    expect(v.status).to.equal(200);
    expect(v.headers.get('content-type')).to.equal('text/javascript; charset=utf-8');
    expect(v.headers.get('cache-control')).to.equal('public, max-age=31536000, immutable');
    expect(await v.text(), 'a module with no bare imports').to.match(/export\{/).and.not.match(/\bfrom\s*["'][^./]/);
  });

  it('answers 404 problems, with the headers, for unknown files and every path out of console/', async () => {
    for (const path of ['/console/assets/nope.js', '/console/assets/vendor/htm-0.0.0.js', '/console/assets/', ...TRAVERSALS]) {
      const r = await fetch(base + path);
      const text = await r.text();
      expect(r.status, path).to.equal(404);
      expect(r.headers.get('content-type'), path).to.equal('application/problem+json');
      expectSecurityHeaders(r.headers, path);
      expect(text, path).not.to.contain('"name": "model-gateway"');
      expect(text, path).not.to.contain('root:');
    }
  });

  it('leaves /console/v1 (the console API) to the routers after it', async () => {
    const r = await fetch(`${base}/console/v1/session`);
    expect(r.status).to.equal(404);
    expect(r.headers.get('content-type')).to.equal('application/problem+json');
  });
});

describe('console pages: served by the gateway, in a browser', function () {
  this.timeout(60_000);
  let gw: Gateway;
  let browser: Browser;
  before(async () => {
    // The endpoint below is never called; loopback is allowed so its URL needs no DNS.
    gw = await startTestGateway({ only: ['provider_b'], yaml: 'webhooks: { allow_private_cidrs: ["127.0.0.1/32"] }' });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
  });

  it('every console answer of the gateway carries the CSP, frame-ancestors and security headers', async () => {
    // With the sandbox on, its own (plain HTTP) origin may serve result thumbnails too.
    const csp = CONSOLE_CSP.replace("img-src 'self' data: https:", `img-src 'self' data: https: ${new URL(gw.sandbox!.urlFor('x')).origin}`);
    expect(csp).not.to.equal(CONSOLE_CSP);
    for (const path of ['/console', '/console/webhooks', '/console/assets/app.js', '/console/assets/nope.js']) {
      const r = await fetch(gw.url + path);
      expectSecurityHeaders(r.headers, path, csp);
    }
  });

  it('a webhook description holding markup is shown as text: no script runs, no dialog opens', async () => {
    const description = '<script>alert("xss")</script><img src=x onerror=alert(1)>';
    const ep = await call(gw.url, 'POST', '/v1/webhooks/endpoints', { key: DEMO_KEY, body: { url: 'https://localhost:9/in', events: ['task.failed'], description } });
    expect(ep.status).to.equal(201);
    const context = await browser.newContext({ baseURL: gw.url });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      const dialogs: string[] = [];
      page.on('dialog', (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
      await page.goto('/console');
      await page.getByLabel('API key').fill(DEMO_KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
      const shown = page.locator('li.endpoint .description', { hasText: 'alert("xss")' });
      await shown.waitFor();
      expect(await shown.innerText()).to.equal(description);
      expect(await page.locator('li.endpoint script, li.endpoint img').count()).to.equal(0);
      await page.waitForTimeout(200); // an onerror handler would have fired by now
      expect(dialogs).to.deep.equal([]);
      await page.screenshot({ path: `${ARTIFACTS}xss-as-text.png`, fullPage: true });
    } finally {
      await context.close();
    }
  });

  it('the console cannot be framed by another page', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const blocked: string[] = [];
      page.on('console', (m) => blocked.push(m.text()));
      await page.setContent(`<iframe src="${gw.url}/console"></iframe>`);
      await page.waitForTimeout(500);
      const frame = page.frames().find((f) => f.url().startsWith(gw.url));
      const framedText = frame ? await frame.evaluate(() => document.body?.innerText ?? '').catch(() => '') : '';
      expect(framedText).not.to.contain('Sign in');
    } finally {
      await context.close();
    }
  });
});

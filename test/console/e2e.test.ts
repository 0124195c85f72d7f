// The console end to end in a real browser (Debian's chromium driven by playwright-core) against
// a gateway started in-process with the sandbox, and a local HTTPS webhook receiver with its own
// CA. The steps run in order on one signed-in page, as a tenant would click through them;
// screenshots of each page go to test/console/artifacts/ (not committed).
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Gateway } from '../../engine/gateway.ts';
import { call, DEMO_KEY, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { testPki } from '../webhooks/support/pki.ts';
import { Receiver } from '../webhooks/support/receiver.ts';
import { ARTIFACTS, launchChromium } from './support.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const ADMIN_TOKEN = 'console-e2e-admin-token';

describe('console end to end (chromium)', function () {
  this.timeout(60_000);
  // Each step starts where the previous one left the page: after a failure the rest would only
  // fail again, slowly.
  this.bail(true);
  let gw: Gateway;
  let rx: Receiver;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  let failNext = 0;
  const dialogs: string[] = [];
  const pageErrors: string[] = [];

  const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
  const nav = async (label: string) => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: label, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: label }).waitFor();
  };

  before(async () => {
    rx = await Receiver.start(() => (failNext-- > 0 ? { status: 500 } : { status: 200 }));
    gw = await startTestGateway({
      only: ['provider_b'],
      adminToken: ADMIN_TOKEN,
      yaml: `webhooks: { allow_private_cidrs: ["127.0.0.1/32"], ca_pem: ${JSON.stringify([testPki().caPem])} }`,
    });
    base = gw.url;
    browser = await launchChromium();
    context = await browser.newContext({ baseURL: base, viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('pageerror', (e) => pageErrors.push(e.message));
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
    await rx?.close();
  });
  afterEach(function () {
    // Every step must leave the page free of script errors and dialogs.
    if (this.currentTest?.state === 'passed') {
      expect(pageErrors, 'script errors in the page').to.deep.equal([]);
      expect(dialogs, 'dialogs').to.deep.equal([]);
    }
  });

  let totalBefore = '';
  it('signs in with the demo key; the page keeps no key, only an HttpOnly SameSite=Strict cookie', async () => {
    await page.goto('/console');
    await page.getByLabel('API key').fill(DEMO_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.locator('[data-field="available"]').waitFor();
    await page.locator('.total-credits').waitFor();
    totalBefore = await page.locator('.total-credits').innerText();
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie);
    expect(stored).not.to.contain(DEMO_KEY);
    expect(await page.content()).not.to.contain(DEMO_KEY);
    const session = (await context.cookies()).find((c) => c.name === 'gw_session');
    expect(session, 'gw_session cookie').to.include({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(session!.value).not.to.contain(DEMO_KEY);
    await shot('overview');
  });

  it('creates a key (secret shown once), uses it with plain HTTP requests, revokes it: 401', async () => {
    await nav('API keys');
    await page.getByLabel('Name').fill('e2e key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secretBox = page.locator('.secret-once');
    await secretBox.waitFor();
    expect(await secretBox.innerText()).to.contain('you will not see it again');
    const secret = await secretBox.locator('code.secret').innerText();
    expect(secret).to.match(/^gw_(test|live)_/);
    await shot('keys-secret');
    await secretBox.getByRole('button', { name: 'Copy' }).click();
    // The clipboard answers asynchronously: wait for the status line to say what happened.
    const status = secretBox.getByRole('status');
    await status.filter({ hasText: /\S/ }).waitFor();
    const copied = await status.innerText();
    if (copied.startsWith('Copied')) expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(secret);
    else expect(copied).to.match(/Selected/);

    expect((await call(base, 'GET', '/v1/balance', { key: secret })).status).to.equal(200);
    const task = await call(base, 'POST', IMAGES, { key: secret, body: { prompt: 'a lighthouse, made with the console key' } });
    expect(task.status).to.equal(202);

    await secretBox.getByRole('button', { name: 'I have saved it' }).click();
    expect(await page.content()).not.to.contain(secret);
    const row = page.locator('tr', { hasText: 'e2e key' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Yes, revoke' }).click();
    await row.locator('.status-revoked').waitFor();
    const refused = await call(base, 'GET', '/v1/balance', { key: secret });
    expect(refused.status).to.equal(401);
    expect(refused.body.error_code).to.equal(1001);
    await shot('keys');
  });

  let endpointSecret = '';
  it('creates a webhook endpoint: the secret once, masked afterwards; the API refusal shows inline', async () => {
    await nav('Webhooks');
    const form = page.locator('form', { has: page.getByRole('button', { name: 'Create endpoint' }) });
    await form.getByLabel('URL').fill('http://example.com/hook');
    await form.getByRole('button', { name: 'Create endpoint' }).click();
    const refusal = form.getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.innerText()).to.match(/https/i);

    await form.getByLabel('URL').fill(rx.url('/hook'));
    await form.getByLabel('Description (optional)').fill('e2e receiver');
    await form.getByRole('button', { name: 'Create endpoint' }).click();
    const secretBox = page.locator('.secret-once');
    await secretBox.waitFor();
    endpointSecret = await secretBox.locator('code.secret').innerText();
    expect(endpointSecret).to.match(/^whsec_/);
    await secretBox.getByRole('button', { name: 'I have saved it' }).click();
    const ep = page.locator('li.endpoint', { hasText: rx.url('/hook') });
    await ep.waitFor();
    const masked = await ep.locator('.masked-secret').innerText();
    expect(masked).not.to.equal(endpointSecret);
    expect(endpointSecret).not.to.contain(masked.replace(/[.…*]+/g, '')); // nothing past the preview
    await page.reload();
    await page.locator('li.endpoint', { hasText: rx.url('/hook') }).waitFor();
    expect(await page.content()).not.to.contain(endpointSecret);
    await shot('webhooks');
  });

  const attemptRows = () => page.locator('table.attempts tbody tr');
  it('sends a test event: the delivery succeeds, with its attempt', async () => {
    await nav('Webhooks');
    const ep = page.locator('li.endpoint', { hasText: rx.url('/hook') });
    await ep.getByRole('button', { name: 'Send test event' }).click();
    await page.getByRole('link', { name: 'see its delivery' }).click();
    await page.locator('.delivery-status .status-succeeded').waitFor({ timeout: 15_000 });
    expect(await attemptRows().count()).to.equal(1);
    expect(await attemptRows().first().locator('.attempt-status').innerText()).to.equal('200');
    expect(rx.requests.filter((r) => r.path === '/hook')).to.have.length(1);
    await shot('delivery');
  });

  it('a receiver that fails once: the retry shows in the attempts, and resend sends it again', async () => {
    failNext = 1;
    await nav('Webhooks');
    await page.locator('li.endpoint', { hasText: rx.url('/hook') }).getByRole('button', { name: 'Send test event' }).click();
    await page.getByRole('link', { name: 'see its delivery' }).click();
    await page.locator('.delivery-status .status-succeeded').waitFor({ timeout: 15_000 });
    await page.waitForFunction(() => document.querySelectorAll('table.attempts tbody tr').length === 2);
    expect(await attemptRows().nth(0).locator('.attempt-status').innerText()).to.equal('500');
    expect(await attemptRows().nth(1).locator('.attempt-status').innerText()).to.equal('200');
    await page.getByRole('button', { name: 'Resend' }).click();
    await page.getByText('Sent again').waitFor();
    await page.waitForFunction(() => document.querySelectorAll('table.attempts tbody tr').length === 3, undefined, { timeout: 15_000 });
    await page.locator('.delivery-status .status-succeeded').waitFor();
    await shot('delivery-retry-resend');

    await nav('Deliveries');
    await page.locator('table tbody tr').first().waitFor();
    expect(await page.locator('table tbody tr').count()).to.be.greaterThanOrEqual(2);
    await shot('deliveries');
  });

  let taskId = '';
  it('a task created over HTTP reaches completed in the task list; its detail shows result, cost and events', async () => {
    const created = await call(base, 'POST', IMAGES, { key: DEMO_KEY, body: { prompt: 'a lighthouse at dawn, watercolor' } });
    expect(created.status).to.equal(202);
    taskId = created.body.task_info.id;
    await nav('Tasks');
    const row = page.locator(`tr[data-task-id="${taskId}"]`);
    await row.waitFor({ timeout: 15_000 });
    await row.locator('.status-completed').waitFor({ timeout: 15_000 });
    await shot('tasks');
    await row.getByRole('link').click();
    await page.getByRole('heading', { level: 1, name: `Task ${taskId}` }).waitFor();
    await page.locator('.task-status .status-completed').waitFor();
    expect(await page.locator('ul.media li').count()).to.be.greaterThan(0);
    // The thumbnails load (the CSP lets the sandbox's own origin serve them).
    await page.waitForFunction(() => [...document.querySelectorAll('ul.media img')].every((i) => (i as HTMLImageElement).complete), undefined, { timeout: 5_000 });
    expect(await page.$$eval('ul.media img', (imgs) => imgs.filter((i) => (i as HTMLImageElement).naturalWidth === 0).length)).to.equal(0);
    const events = page.locator('section', { has: page.getByRole('heading', { name: 'Events and deliveries' }) });
    await events.getByText('task.succeeded').waitFor({ timeout: 15_000 });
    await shot('task');
  });

  it('the spend chart shows the new spend', async () => {
    await waitForTask(base, `${IMAGES}/${taskId}`, DEMO_KEY);
    await nav('Overview');
    // The page refreshes itself every 10 s; Refresh asks now.
    const changed = async () => (await page.locator('.total-credits').innerText()) !== totalBefore && (await page.locator('svg.spend-chart rect.bar').count()) > 0;
    for (let i = 0; i < 30 && !(await changed()); i++) {
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.waitForTimeout(500);
    }
    expect(Number(await page.locator('.total-credits').innerText())).to.be.greaterThan(Number(totalBefore));
    expect(await page.locator('.legend li', { hasText: 'provider_b' }).count()).to.equal(1);
    await shot('overview-spend');
    // Readable on a phone: one column, nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(390);
    await shot('overview-phone');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('the credits page lists the ledger and exports it as CSV', async () => {
    await nav('Credits');
    await page.locator('table.ledger tbody tr').first().waitFor();
    expect(await page.locator('table.ledger').innerText()).to.contain('settle');
    const href = await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href');
    expect(href).to.contain('format=csv');
    const csv = await page.request.get(href!);
    expect(csv.status()).to.equal(200);
    expect(csv.headers()['content-type']).to.match(/text\/csv/);
    await shot('credits');
  });

  it('the operator signs in with the admin token, tops up a new tenant and opens its console', async () => {
    const op = await browser.newContext({ baseURL: base, viewport: { width: 1280, height: 900 } });
    try {
      const p = await op.newPage();
      p.on('pageerror', (e) => pageErrors.push(e.message));
      await p.goto('/console/operator');
      await p.getByLabel('Admin token').fill(ADMIN_TOKEN);
      await p.getByRole('button', { name: 'Sign in as operator' }).click();
      await p.getByRole('heading', { level: 1, name: 'Tenants' }).waitFor();
      await p.getByLabel('Name').fill('Acme e2e');
      await p.getByRole('button', { name: 'Create tenant' }).click();
      await p.getByRole('status').getByRole('link', { name: 'Acme e2e' }).click();
      await p.getByRole('heading', { level: 1, name: 'Tenant Acme e2e' }).waitFor();
      await p.getByLabel('Credits', { exact: true }).first().fill('500');
      await p.getByLabel('Reference (e.g. the payment id)').fill('pay_e2e_1');
      await p.getByRole('button', { name: 'Top up' }).click();
      await p.waitForFunction(() => document.querySelector('[data-field="available"]')?.textContent === '500.00');
      await p.screenshot({ path: `${ARTIFACTS}operator-tenant.png`, fullPage: true });
      await p.getByRole('button', { name: "Open this tenant's console" }).click();
      await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      await p.getByRole('note').getByText('as the operator').waitFor();
      await p.waitForFunction(() => document.querySelector('[data-field="available"]')?.textContent === '500.00');
      await p.screenshot({ path: `${ARTIFACTS}operator-view.png`, fullPage: true });
    } finally {
      await op.close();
    }
  });

  it('signs out: the session is refused afterwards', async () => {
    const cookie = (await context.cookies()).find((c) => c.name === 'gw_session');
    expect(cookie).to.not.equal(undefined);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in to the console' }).waitFor();
    await shot('signed-out');
    const headers = { cookie: `gw_session=${cookie!.value}` };
    expect((await call(base, 'GET', '/console/v1/session', { headers })).status).to.equal(401);
    expect((await call(base, 'GET', '/v1/balance', { headers })).status).to.equal(401);
  });
});

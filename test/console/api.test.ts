// The tenant self-service API (docs/console-api.md): keys, the task list and one task with its
// events, usage from the ledger, the ledger's filters and CSV export. Both stores.
import { expect } from 'chai';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { testPki } from '../webhooks/support/pki.ts';
import { Receiver } from '../webhooks/support/receiver.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const VIDEO = '/vendors/provider_a/v1/model_a/generation';

describe('tenant self-service API', () => {
  let gw: Gateway;
  let rx: Receiver;
  before(async () => {
    rx = await Receiver.start();
    gw = await startTestGateway({ yaml: `webhooks: { allow_private_cidrs: ["127.0.0.1/32"], ca_pem: ${JSON.stringify([testPki().caPem])} }` });
  });
  after(async () => {
    await gw.close();
    await rx.close();
  });

  /** Every answer checked here also matches its schema in the gateway's own /openapi.json. */
  let ajv: Ajv2020 | undefined;
  const conforms = async (schema: string, value: unknown) => {
    if (!ajv) {
      const doc = (await call(gw.url, 'GET', '/openapi.json')).body;
      ajv = new Ajv2020({ strict: false, allErrors: true });
      (addFormats as unknown as (a: Ajv2020) => void)(ajv);
      ajv.addSchema({ ...doc, $id: 'https://gateway.test/openapi.json' });
    }
    const validate = ajv.getSchema(`https://gateway.test/openapi.json#/components/schemas/${schema}`)!;
    expect(validate(value), `${schema}: ${JSON.stringify(validate.errors)}`).to.equal(true);
  };

  const create = async (key: string, path = IMAGES, prompt = 'a lighthouse') => {
    const r = await call(gw.url, 'POST', path, { key, body: { prompt } });
    expect(r.status, r.text).to.be.oneOf([200, 202]); // provider_a's descriptor answers creates with 200
    return r.body.task_info.id as string;
  };
  /** Settlement follows the terminal transition: wait until the ledger shows `n` settle entries. */
  const settled = async (key: string, n: number) => {
    for (let i = 0; i < 500; i++) {
      const r = await call(gw.url, 'GET', '/v1/ledger?type=settle&limit=200', { key });
      if (r.body.data.length >= n) return r.body.data;
      await new Promise((res) => setTimeout(res, 10));
    }
    throw new Error(`fewer than ${n} settlements`);
  };

  describe('keys', () => {
    it('lists previews only, mints with the caller\'s scopes by default, shows the secret once', async () => {
      const { key, keyId } = await newTenant(gw, { scopes: ['console:*', 'provider_b:*'] });
      const made = await call(gw.url, 'POST', '/v1/keys', { key, body: { name: 'ci' } });
      expect(made.status, made.text).to.equal(201);
      expect(made.body).to.include({ name: 'ci', mode: 'live', expires_at: null, revoked_at: null });
      expect(made.body.scopes).to.deep.equal(['console:*', 'provider_b:*']);
      expect(made.body.secret).to.match(/^gw_live_[0-9A-Za-z]{40}$/);
      await conforms('console_key_with_secret', made.body);
      expect(made.body.preview).to.equal(`${made.body.secret.slice(0, 12)}…${made.body.secret.slice(-4)}`);
      const list = await call(gw.url, 'GET', '/v1/keys', { key });
      expect(list.status).to.equal(200);
      expect(list.body.has_more).to.equal(false);
      await conforms('console_key_list', list.body);
      expect(list.body.data.map((k: { id: string }) => k.id)).to.include.members([keyId, made.body.id]);
      expect(list.text).not.to.include(made.body.secret);
      for (const k of list.body.data) expect(Object.keys(k).sort()).to.deep.equal(['created_at', 'expires_at', 'id', 'mode', 'name', 'preview', 'revoked_at', 'scopes']);
      expect((await call(gw.url, 'GET', `/v1/keys/${made.body.id}`, { key })).status).to.be.oneOf([404, 405]);
      // The new key works on its own.
      expect((await call(gw.url, 'GET', '/v1/balance', { key: made.body.secret })).status).to.equal(200);
    });

    it('refuses widening scopes (403/1002 naming the scope), a live key from a test key, and needs console:create', async () => {
      const { key } = await newTenant(gw, { scopes: ['console:*', 'provider_b:read'] });
      const wide = await call(gw.url, 'POST', '/v1/keys', { key, body: { name: 'x', scopes: ['provider_b:*'] } });
      expect(wide.status).to.equal(403);
      expect(wide.body.error_code).to.equal(1002);
      expect(wide.body.detail).to.include('provider_b:*');
      const star = await call(gw.url, 'POST', '/v1/keys', { key, body: { name: 'x', scopes: ['*'] } });
      expect(star.status).to.equal(403);
      const narrower = await call(gw.url, 'POST', '/v1/keys', { key, body: { name: 'x', scopes: ['console:read', 'provider_b:read'] } });
      expect(narrower.status, narrower.text).to.equal(201);

      const { key: test } = await newTenant(gw, { mode: 'test' });
      const live = await call(gw.url, 'POST', '/v1/keys', { key: test, body: { name: 'x', mode: 'live' } });
      expect(live.status).to.equal(403);
      expect(live.body.error_code).to.equal(1002);
      const same = await call(gw.url, 'POST', '/v1/keys', { key: test, body: { name: 'x' } });
      expect(same.status).to.equal(201);
      expect(same.body.mode).to.equal('test');
      expect(same.body.secret).to.match(/^gw_test_/);

      const { key: reader } = await newTenant(gw, { scopes: ['console:read'] });
      const denied = await call(gw.url, 'POST', '/v1/keys', { key: reader, body: { name: 'x' } });
      expect(denied.status).to.equal(403);
      const bad = await call(gw.url, 'POST', '/v1/keys', { key, body: { name: 'x', scopes: ['nonsense scope'] } });
      expect(bad.status).to.equal(400);
      expect(bad.body.errors[0].pointer).to.equal('/scopes/0');
    });

    it('a temporary key mints keys that expire no later than itself', async () => {
      const until = new Date(Date.now() + 3600_000).toISOString();
      const { key } = await newTenant(gw, { expires_at: until });
      const made = await call(gw.url, 'POST', '/v1/keys', { key, body: { name: 'x' } });
      expect(made.status).to.equal(201);
      expect(made.body.expires_at).to.equal(until);
      const later = await call(gw.url, 'POST', '/v1/keys', { key, body: { name: 'x', expires_at: new Date(Date.now() + 7200_000).toISOString() } });
      expect(later.status).to.equal(403);
      const past = await call(gw.url, 'POST', '/v1/keys', { key, body: { name: 'x', expires_at: '2020-01-01T00:00:00Z' } });
      expect(past.status).to.equal(400);
    });

    it('revoke: the key gets 401 at once; another tenant\'s key is 404; revoking the calling key is allowed', async () => {
      const { key } = await newTenant(gw);
      const other = await newTenant(gw);
      const made = await call(gw.url, 'POST', '/v1/keys', { key, body: { name: 'short-lived' } });
      const revoked = await call(gw.url, 'DELETE', `/v1/keys/${made.body.id}`, { key });
      expect(revoked.status).to.equal(200);
      expect(revoked.body.revoked_at).to.be.a('string');
      expect(revoked.body).not.to.have.property('secret');
      const used = await call(gw.url, 'GET', '/v1/balance', { key: made.body.secret });
      expect(used.status).to.equal(401);
      expect(used.body.error_code).to.equal(1001);
      expect((await call(gw.url, 'DELETE', `/v1/keys/${other.keyId}`, { key })).status).to.equal(404);
      expect((await call(gw.url, 'GET', '/v1/balance', { key: other.key })).status).to.equal(200);
      const self = (await call(gw.url, 'GET', '/v1/keys', { key })).body.data.find((k: { revoked_at: string | null; name: string }) => k.revoked_at === null && k.name !== 'short-lived');
      expect((await call(gw.url, 'DELETE', `/v1/keys/${self.id}`, { key })).status).to.equal(200);
      expect((await call(gw.url, 'GET', '/v1/keys', { key })).status).to.equal(401);
    });
  });

  describe('tasks', () => {
    let key: string;
    let otherKey: string;
    const ids: string[] = [];
    let failed: string;
    let video: string;
    let middle: string;
    before(async () => {
      ({ key } = await newTenant(gw));
      ({ key: otherKey } = await newTenant(gw));
      for (let i = 0; i < 7; i++) {
        ids.push(await create(key));
        await new Promise((res) => setTimeout(res, 3)); // distinct created_at milliseconds
        if (i === 3) {
          // created_after is "at or after": middle must fall strictly between ids[3] and ids[4]
          middle = new Date(Date.now()).toISOString();
          await new Promise((res) => setTimeout(res, 3));
        }
      }
      failed = await create(key, IMAGES, 'a lighthouse [sandbox:fail]');
      video = await create(key, VIDEO, 'a paper boat');
      await create(otherKey);
      await waitForTask(gw.url, `${IMAGES}/${failed}`, key);
      await waitForTask(gw.url, `${VIDEO}/${video}`, key);
      for (const id of ids) await waitForTask(gw.url, `${IMAGES}/${id}`, key);
    });

    it('lists newest first across pages with a cursor, and never another tenant\'s tasks', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const r = await call(gw.url, 'GET', `/v1/tasks?limit=4${cursor ? `&starting_after=${cursor}` : ''}`, { key });
        expect(r.status, r.text).to.equal(200);
        await conforms('console_task_list', r.body);
        expect(r.body.data.length).to.be.at.most(4);
        seen.push(...r.body.data.map((t: { task_info: { id: string } }) => t.task_info.id));
        cursor = r.body.has_more ? r.body.next_cursor : null;
        if (!r.body.has_more) expect(r.body.next_cursor).to.equal(null);
        pages++;
      } while (cursor);
      expect(pages).to.equal(3);
      expect(seen).to.deep.equal([video, failed, ...[...ids].reverse()]);
      const first = (await call(gw.url, 'GET', '/v1/tasks?limit=1', { key })).body.data[0];
      expect(first.vendor).to.equal('provider_a');
      expect(first.route).to.be.a('string').and.not.include('/');
      expect(first.task_info.status).to.equal('completed');
      expect(first.cost).to.match(/^\d+\.\d{3}$/);
      const theirs = await call(gw.url, 'GET', '/v1/tasks', { key: otherKey });
      expect(theirs.body.data).to.have.length(1);
      expect(ids).not.to.include(theirs.body.data[0].task_info.id);
      const foreignCursor = await call(gw.url, 'GET', `/v1/tasks?starting_after=${theirs.body.data[0].task_info.id}`, { key });
      expect(foreignCursor.status).to.equal(400);
    });

    it('filters by status, vendor, route and creation time', async () => {
      const byStatus = await call(gw.url, 'GET', '/v1/tasks?status=failed', { key });
      expect(byStatus.body.data.map((t: { task_info: { id: string } }) => t.task_info.id)).to.deep.equal([failed]);
      expect(byStatus.body.data[0].cost).to.equal('0.000');
      expect(byStatus.body.data[0].task_info.error.code).to.be.a('number');
      const byVendor = await call(gw.url, 'GET', '/v1/tasks?vendor=provider_a', { key });
      expect(byVendor.body.data.map((t: { task_info: { id: string } }) => t.task_info.id)).to.deep.equal([video]);
      const route = byVendor.body.data[0].route as string;
      const byRoute = await call(gw.url, 'GET', `/v1/tasks?route=${route}`, { key });
      expect(byRoute.body.data).to.have.length(1);
      const byKeyRoute = await call(gw.url, 'GET', `/v1/tasks?route=provider_a/${route}`, { key });
      expect(byKeyRoute.body.data).to.have.length(1);
      const completedB = await call(gw.url, 'GET', '/v1/tasks?status=completed&vendor=provider_b&limit=3', { key });
      expect(completedB.body.data).to.have.length(3);
      expect(completedB.body.has_more).to.equal(true);
      const rest = await call(gw.url, 'GET', `/v1/tasks?status=completed&vendor=provider_b&limit=100&starting_after=${completedB.body.next_cursor}`, { key });
      expect(rest.body.data).to.have.length(4);
      expect(rest.body.has_more).to.equal(false);

      const after = await call(gw.url, 'GET', `/v1/tasks?vendor=provider_b&status=completed&created_after=${middle}`, { key });
      expect(after.body.data.map((t: { task_info: { id: string } }) => t.task_info.id)).to.deep.equal(ids.slice(4).reverse());
      const before = await call(gw.url, 'GET', `/v1/tasks?created_before=${middle}`, { key });
      expect(before.body.data.map((t: { task_info: { id: string } }) => t.task_info.id)).to.deep.equal(ids.slice(0, 4).reverse());
      const none = await call(gw.url, 'GET', '/v1/tasks?created_after=2999-01-01T00:00:00Z', { key });
      expect(none.body).to.deep.equal({ data: [], has_more: false, next_cursor: null });
      for (const q of ['status=done', 'limit=0', 'limit=101', 'created_after=yesterday']) {
        const bad = await call(gw.url, 'GET', `/v1/tasks?${q}`, { key });
        expect(bad.status, q).to.equal(400);
      }
    });

    it('every list reads ?limit the one way (engine/http/query.ts): digits only (2001), within the list\'s range (2003)', async () => {
      for (const [path, max] of [['/v1/tasks', 100], ['/v1/ledger', 200]] as const) {
        for (const [q, code] of [['1e1', 2001], ['%205', 2001], ['-1', 2001], ['', 2001], ['0', 2003], [String(max + 1), 2003], ['5&limit=6', 2001]] as const) {
          const r = await call(gw.url, 'GET', `${path}?limit=${q}`, { key });
          expect([r.status, r.body.error_code], `${path}?limit=${q}`).to.deep.equal([400, code]);
        }
        const ok = await call(gw.url, 'GET', `${path}?limit=${max}`, { key });
        expect(ok.status, path).to.equal(200);
      }
    });

    it('one task with its events and their deliveries; 404 for another tenant\'s task', async () => {
      const r = await call(gw.url, 'GET', `/v1/tasks/${ids[0]}`, { key });
      expect(r.status, r.text).to.equal(200);
      expect(r.body.task.task_info).to.include({ id: ids[0], status: 'completed' });
      await conforms('console_task_detail', r.body);
      expect(r.body.task.vendor).to.equal('provider_b');
      expect(r.body.events.map((e: { type: string }) => e.type)).to.deep.equal(['task.created', 'task.succeeded']);
      for (const e of r.body.events) {
        expect(e.id).to.match(/^evt_/);
        expect(e.deliveries).to.be.an('array');
      }
      const failedOne = await call(gw.url, 'GET', `/v1/tasks/${failed}`, { key });
      expect(failedOne.body.events.map((e: { type: string }) => e.type)).to.deep.equal(['task.created', 'task.failed']);
      const foreign = await call(gw.url, 'GET', `/v1/tasks/${ids[0]}`, { key: otherKey });
      expect(foreign.status).to.equal(404);
      expect((await call(gw.url, 'GET', '/v1/tasks/no-such-task', { key })).status).to.equal(404);
    });

    it('lists the deliveries of a task\'s events', async () => {
      const { key: k } = await newTenant(gw);
      const ep = await call(gw.url, 'POST', '/v1/webhooks/endpoints', { key: k, body: { url: rx.url('/console-task'), events: ['task.created'] } });
      expect(ep.status, ep.text).to.equal(201);
      const id = await create(k);
      for (let i = 0; i < 200; i++) {
        const r = await call(gw.url, 'GET', `/v1/tasks/${id}`, { key: k });
        const d = r.body.events[0].deliveries;
        if (d.length && d[0].status === 'succeeded') {
          expect(d[0]).to.have.keys(['id', 'endpoint_id', 'status', 'attempt_count', 'next_attempt_at']);
          expect(d[0]).to.include({ endpoint_id: ep.body.id, attempt_count: 1, next_attempt_at: null });
          expect(r.body.events[1]?.deliveries ?? []).to.deep.equal([]); // not subscribed to task.succeeded
          return;
        }
        await new Promise((res) => setTimeout(res, 10));
      }
      throw new Error('no delivery listed');
    });
  });

  describe('usage and the ledger', () => {
    it('usage per day x vendor x route adds up to the ledger\'s settlements for the range', async () => {
      const { key } = await newTenant(gw);
      const a = await create(key);
      const b = await create(key);
      const v = await create(key, VIDEO, 'a paper boat');
      for (const [p, id] of [[IMAGES, a], [IMAGES, b], [VIDEO, v]] as const) await waitForTask(gw.url, `${p}/${id}`, key);
      const chat = await call(gw.url, 'POST', '/v1/chat/completions', { key, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } });
      expect(chat.status, chat.text).to.equal(200);
      const settles = await settled(key, 4);
      const today = new Date().toISOString().slice(0, 10);
      const r = await call(gw.url, 'GET', `/v1/usage?from=${today}&to=${today}`, { key });
      expect(r.status, r.text).to.equal(200);
      expect(r.body).to.include({ from: today, to: today });
      await conforms('console_usage', r.body);
      const sum = (xs: string[]) => xs.reduce((s, x) => s + Math.round(Number(x) * 1000), 0);
      expect(sum([r.body.total_credits])).to.equal(sum(settles.map((e: { amount: string }) => e.amount)));
      expect(sum(r.body.data.map((d: { credits: string }) => d.credits))).to.equal(sum([r.body.total_credits]));
      expect(r.body.data.reduce((n: number, d: { count: number }) => n + d.count, 0)).to.equal(4);
      const images = r.body.data.find((d: { vendor: string }) => d.vendor === 'provider_b');
      expect(images).to.include({ day: today, count: 2 });
      const chatRow = r.body.data.find((d: { route: string }) => d.route === 'gpt-4o-mini');
      expect(chatRow, JSON.stringify(r.body.data)).to.include({ count: 1 });
      // The default range is the last 30 days, today included.
      const def = await call(gw.url, 'GET', '/v1/usage', { key });
      expect(def.body.to).to.equal(today);
      expect(def.body.total_credits).to.equal(r.body.total_credits);
      const old = await call(gw.url, 'GET', '/v1/usage?from=2020-01-01&to=2020-01-31', { key });
      expect(old.body).to.deep.equal({ from: '2020-01-01', to: '2020-01-31', data: [], total_credits: '0.000' });
      expect((await call(gw.url, 'GET', '/v1/usage?from=2020-01-01&to=2020-06-01', { key })).status).to.equal(400);
      expect((await call(gw.url, 'GET', '/v1/usage?from=2020-02-01&to=2020-01-01', { key })).status).to.equal(400);
      expect((await call(gw.url, 'GET', '/v1/usage?from=not-a-date', { key })).status).to.equal(400);
    });

    it('filters the ledger by type and time, and exports it as CSV that parses', async () => {
      const { key, tenant } = await newTenant(gw);
      await gw.billing.adjust(tenant.id, -1500, 'adj-1', '=HYPERLINK("x"), with "quotes"');
      const id = await create(key);
      await waitForTask(gw.url, `${IMAGES}/${id}`, key);
      await settled(key, 1);
      const holds = await call(gw.url, 'GET', '/v1/ledger?type=hold', { key });
      await conforms('console_ledger_page', holds.body);
      await conforms('console_wallet', (await call(gw.url, 'GET', '/v1/balance', { key })).body);
      expect(holds.body.data.map((e: { kind: string }) => e.kind)).to.deep.equal(['hold']);
      const today = new Date().toISOString().slice(0, 10);
      const all = await call(gw.url, 'GET', `/v1/ledger?from=${today}&to=${today}`, { key });
      // Newest first: the top-up and adjustment, then the task's hold and its settlement (a
      // partial settlement adds a release).
      const kinds = all.body.data.map((e: { kind: string }) => e.kind).reverse();
      expect(kinds.slice(0, 4)).to.deep.equal(['topup', 'adjustment', 'hold', 'settle']);
      expect((await call(gw.url, 'GET', '/v1/ledger?from=2020-01-01&to=2020-01-02', { key })).body.data).to.deep.equal([]);
      const paged = await call(gw.url, 'GET', '/v1/ledger?type=topup&limit=1', { key });
      expect(paged.body.data).to.have.length(1);
      expect((await call(gw.url, 'GET', '/v1/ledger?type=refund', { key })).status).to.equal(400);

      const csv = await call(gw.url, 'GET', `/v1/ledger?format=csv&from=${today}`, { key });
      expect(csv.status).to.equal(200);
      expect(csv.headers.get('content-type')).to.match(/^text\/csv/);
      const rows = parseCsv(csv.text);
      expect(rows[0]).to.deep.equal(['id', 'seq', 'at', 'kind', 'amount', 'amount_milli', 'ref', 'note']);
      const body = rows.slice(1);
      expect(body.map((r) => r[0])).to.deep.equal(all.body.data.map((e: { id: string }) => e.id));
      const adj = body.find((r) => r[3] === 'adjustment')!;
      expect(adj[4]).to.equal('-1.500');
      expect(adj[7]).to.equal('\'=HYPERLINK("x"), with "quotes"'); // never a formula in a spreadsheet
      const onlySettles = parseCsv((await call(gw.url, 'GET', '/v1/ledger?format=csv&type=settle', { key })).text);
      expect(onlySettles.slice(1).map((r) => r[3])).to.deep.equal(['settle']);
    });
  });
});

/** RFC 4180: quoted fields with doubled quotes, CRLF rows. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') row.push(field), (field = '');
    else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      (row = []), (field = ''), i++;
    } else field += c;
  }
  return rows;
}

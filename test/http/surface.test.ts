// The HTTP surface every route shares: Traceparent on every response, RFC 9457 problem bodies
// field by field, malformed JSON, unknown paths, wrong methods, oversize bodies, bad task ids.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { call, DEMO_KEY, newTenant, startTestGateway, waitForTask, type CallResult } from '../helpers/gateway.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const TP = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

function expectProblem(r: CallResult, status: number, code: number, title: string) {
  expect(r.status, r.text).to.equal(status);
  expect(r.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(r.body.status).to.equal(status);
  expect(r.body.error_code).to.equal(code);
  expect(r.body.title).to.equal(title);
  expect(r.body.type).to.match(new RegExp(`^https://[^#]+#${code}$`));
  expect(r.body.detail).to.be.a('string').and.not.empty;
  expect(r.body.instance).to.be.a('string').and.match(/^\//);
  expect(r.body.trace_id).to.match(/^[0-9a-f]{32}$/);
  expect(r.headers.get('traceparent')).to.match(TP);
  expect(r.headers.get('traceparent')!.split('-')[1]).to.equal(r.body.trace_id);
  expect(r.text).not.to.match(/at .*\.ts:\d+|Error:|stack/);
}

describe('HTTP surface', () => {
  let gw: Gateway;
  let key: string;
  before(async () => {
    gw = await startTestGateway();
    ({ key } = await newTenant(gw));
  });
  after(() => gw.close());

  describe('Traceparent', () => {
    it('continues a valid incoming trace with a new span id, on success and on error', async () => {
      const incoming = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      for (const r of [
        await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'x' }, headers: { traceparent: incoming } }),
        await call(gw.url, 'POST', IMAGES, { key, body: {}, headers: { traceparent: incoming } }),
        await call(gw.url, 'GET', '/nope', { headers: { traceparent: incoming } }),
      ]) {
        const tp = r.headers.get('traceparent')!;
        expect(tp).to.match(TP);
        expect(tp.split('-')[1]).to.equal('4bf92f3577b34da6a3ce929d0e0e4736');
        expect(tp.split('-')[2]).not.to.equal('00f067aa0ba902b7');
        expect(tp.split('-')[3]).to.equal('01');
      }
    });

    it('starts a new trace when the incoming one is missing or invalid', async () => {
      const bad = ['', 'garbage', '00-00000000000000000000000000000000-00f067aa0ba902b7-01', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'];
      const seen = new Set<string>();
      for (const incoming of bad) {
        const r = await call(gw.url, 'GET', '/healthz', { headers: incoming ? { traceparent: incoming } : {} });
        const tp = r.headers.get('traceparent')!;
        expect(tp).to.match(TP);
        expect(tp.split('-')[1]).not.to.equal('4bf92f3577b34da6a3ce929d0e0e4736');
        seen.add(tp.split('-')[1]!);
      }
      expect(seen.size).to.equal(bad.length);
    });

    it('is on every kind of response: 200, 202, 400, 401, 403, 404, 405, 413, 415', async () => {
      const { key: readOnly } = await newTenant(gw, { scopes: ['provider_b:read'] });
      const created = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'x' } });
      const responses = [
        created,
        await call(gw.url, 'GET', `${IMAGES}/${created.body.task_info.id}`, { key }),
        await call(gw.url, 'POST', IMAGES, { key, raw: '{', headers: { 'content-type': 'application/json' } }),
        await call(gw.url, 'POST', IMAGES, { body: { prompt: 'x' } }),
        await call(gw.url, 'POST', IMAGES, { key: readOnly, body: { prompt: 'x' } }),
        await call(gw.url, 'GET', '/vendors/nobody/v1/x'),
        await call(gw.url, 'DELETE', IMAGES, { key }),
        await call(gw.url, 'POST', IMAGES, { key, raw: JSON.stringify({ prompt: 'x'.repeat(2 * 1024 * 1024) }), headers: { 'content-type': 'application/json' } }),
        await call(gw.url, 'POST', IMAGES, { key, raw: 'prompt=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      ];
      expect(responses.map((r) => r.status)).to.deep.equal([202, 200, 400, 401, 403, 404, 405, 413, 415]);
      for (const r of responses) expect(r.headers.get('traceparent')).to.match(TP);
    });
  });

  describe('problem bodies', () => {
    it('malformed JSON → 400 / 2001', async () => {
      const r = await call(gw.url, 'POST', IMAGES, { key, raw: '{"prompt": ', headers: { 'content-type': 'application/json' } });
      expectProblem(r, 400, 2001, 'Parameter Validation Failed');
      expect(r.body.detail).to.match(/Malformed JSON/);
      expect(r.body.instance).to.equal(IMAGES);
    });

    it('a body that is not a JSON object → 400 / 2001', async () => {
      for (const raw of ['[1,2]', '"text"', 'null', '42']) {
        const r = await call(gw.url, 'POST', IMAGES, { key, raw, headers: { 'content-type': 'application/json' } });
        expectProblem(r, 400, 2001, 'Parameter Validation Failed');
      }
    });

    it('validation failures list JSON pointers with a code each', async () => {
      const missing = await call(gw.url, 'POST', IMAGES, { key, body: {} });
      expectProblem(missing, 400, 2002, 'Required Parameter Missing');
      expect(missing.body.errors).to.deep.equal([{ pointer: '/prompt', detail: 'prompt is required', code: 2002 }]);

      const wrong = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 7, extra: true } });
      expectProblem(wrong, 400, 2001, 'Parameter Validation Failed');
      expect(wrong.body.errors.map((e: { pointer: string; code: number }) => [e.pointer, e.code])).to.deep.equal([['/extra', 2004], ['/prompt', 2001]]);

      const long = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'x'.repeat(8193) } });
      expectProblem(long, 400, 2003, 'Invalid Parameter Value');
      expect(long.body.errors[0].pointer).to.equal('/prompt');
    });

    it('unknown path → 404 / 2005, also without a key', async () => {
      expectProblem(await call(gw.url, 'GET', '/vendors/provider_b/v1/nothing-here', { key }), 404, 2005, 'Resource Not Found');
      expectProblem(await call(gw.url, 'POST', '/v2/whatever'), 404, 2005, 'Resource Not Found');
    });

    it('wrong method on a known path → 405 with Allow', async () => {
      const r = await call(gw.url, 'PUT', IMAGES, { key, body: { prompt: 'x' } });
      expectProblem(r, 405, 2000, 'Method Not Allowed');
      expect(r.headers.get('allow')).to.equal('POST');
      const g = await call(gw.url, 'POST', `${IMAGES}/9b2f0c1e-4a57-4c43-9d5e-6f1f4b1c2a3d`, { key });
      expectProblem(g, 405, 2000, 'Method Not Allowed');
      expect(g.headers.get('allow')).to.equal('GET, HEAD');
    });

    it('the control plane answers 405 with Allow from its route table too, before auth runs', async () => {
      const cases: Array<[string, string, string]> = [
        ['DELETE', '/v1/balance', 'GET, HEAD'],
        ['PUT', '/v1/webhooks/endpoints', 'GET, HEAD, POST'],
        ['POST', '/healthz', 'GET, HEAD'],
        ['GET', '/admin/v1/tenants/t_1/wallet/topups', 'POST'],
        ['PATCH', '/admin/v1/tenants/t_1/webhooks/endpoints', 'GET, HEAD, POST'],
        ['post', '/OPENAPI.JSON/', 'GET, HEAD'],
      ];
      for (const [method, path, allow] of cases) {
        const r = await call(gw.url, method.toUpperCase(), path);
        expectProblem(r, 405, 2000, 'Method Not Allowed');
        expect(r.headers.get('allow'), `${method} ${path}`).to.equal(allow);
        expect(r.headers.get('traceparent')).to.match(/^00-/);
      }
      expectProblem(await call(gw.url, 'GET', '/admin/v1/nothing'), 404, 2005, 'Resource Not Found');
    });

    it('oversize body → 413 / 2101 with the limit', async () => {
      const r = await call(gw.url, 'POST', IMAGES, { key, raw: JSON.stringify({ prompt: 'x'.repeat(1100 * 1024) }), headers: { 'content-type': 'application/json' } });
      expectProblem(r, 413, 2101, 'Request Body Too Large');
      expect(r.body.detail).to.match(/1048576 bytes/);
    });

    it('a non-JSON content type → 415 / 2001', async () => {
      const r = await call(gw.url, 'POST', IMAGES, { key, raw: 'prompt=x', headers: { 'content-type': 'text/plain' } });
      expectProblem(r, 415, 2001, 'Unsupported Media Type');
    });

    it('a non-UUID task id → 400 / 2001 naming task_id', async () => {
      const r = await call(gw.url, 'GET', `${IMAGES}/not-a-uuid`, { key });
      expectProblem(r, 400, 2001, 'Parameter Validation Failed');
      expect(r.body.errors).to.deep.equal([{ pointer: '/task_id', detail: 'must be a UUID' }]);
    });

    it('a path that is not valid percent-encoding → 400 / 2001, not a 500', async () => {
      const r = await call(gw.url, 'GET', `${IMAGES}/%E0%A4%A`, { key });
      expectProblem(r, 400, 2001, 'Parameter Validation Failed');
    });

    it('an unknown task id → 404 / 2005', async () => {
      expectProblem(await call(gw.url, 'GET', `${IMAGES}/9b2f0c1e-4a57-4c43-9d5e-6f1f4b1c2a3d`, { key }), 404, 2005, 'Resource Not Found');
    });
  });

  describe('tenants see only their own tasks', () => {
    it('another tenant reading my task gets the same 404 as for an unknown id', async () => {
      const { key: other } = await newTenant(gw);
      const created = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'mine' } });
      const id = created.body.task_info.id;
      await waitForTask(gw.url, `${IMAGES}/${id}`, key);
      const theirs = await call(gw.url, 'GET', `${IMAGES}/${id}`, { key: other });
      expectProblem(theirs, 404, 2005, 'Resource Not Found');
      expect(theirs.body.detail).to.equal(`No task ${id}.`);
      const demo = await call(gw.url, 'GET', `${IMAGES}/${id}`, { key: DEMO_KEY });
      expect(demo.status).to.equal(404);
    });
  });
});

import { expect } from 'chai';
import { harness, stubPool, waitFor, TENANT, type Harness } from './support/harness.ts';
import { startApi, type TestApi } from './support/app.ts';
import { systemResolver, type HostResolver } from '../../engine/webhooks/ssrf.ts';

// Public hosts answer from a fixed table; anything else (localhost) asks the system resolver.
const resolveHost: HostResolver = async (host) => {
  const table: Record<string, string> = { 'hooks.example.com': '93.184.216.34', 'internal.example.com': '10.1.2.3' };
  return table[host] ? [{ address: table[host]!, family: 4 }] : systemResolver(host);
};

const GOOD = { url: 'https://hooks.example.com/gateway', events: ['task.succeeded', 'task.failed'] };
const OTHER_TENANT = '11111111-2222-4333-8444-555555555555';

describe('webhook endpoints API', () => {
  let h: Harness;
  let api: TestApi;

  beforeEach(async () => {
    h = harness({ pool: stubPool(), resolveHost, config: { allow_private_cidrs: [] } });
    api = await startApi(h);
  });
  afterEach(async () => {
    await api.close();
    await h.shutdown();
  });

  it('creates an endpoint (201) and shows the full secret only then', async () => {
    const res = await api.call('POST', '/v1/webhooks/endpoints', { ...GOOD, description: 'prod receiver' });
    expect(res.status).to.equal(201);
    const e = res.body;
    expect(e.id).to.match(/^we_[0-9A-Za-z]{24}$/);
    expect(e.secret).to.match(/^whsec_[0-9A-Za-z]{32}$/);
    expect(e.secret_preview).to.equal(`whsec_...${e.secret.slice(-4)}`);
    expect(e).to.include({ url: GOOD.url, description: 'prod receiver', enabled: true, disabled_reason: null });
    expect(e.events).to.deep.equal(GOOD.events);
    expect(e).to.not.have.property('tenant_id');
    expect(Date.parse(e.created_at)).to.be.a('number').and.not.NaN;

    const got = await api.call('GET', `/v1/webhooks/endpoints/${e.id}`);
    expect(got.status).to.equal(200);
    expect(got.body).to.not.have.property('secret');
    expect(got.body.secret_preview).to.equal(e.secret_preview);
    expect(JSON.stringify(got.body)).to.not.include(e.secret);

    const list = await api.call('GET', '/v1/webhooks/endpoints');
    expect(list.body.has_more).to.equal(false);
    expect(list.body.data.map((x: { id: string }) => x.id)).to.deep.equal([e.id]);
    expect(JSON.stringify(list.body)).to.not.include(e.secret);
  });

  describe('validation', () => {
    const long = (n: number) => 'https://hooks.example.com/' + 'a'.repeat(n - 'https://hooks.example.com/'.length);
    const cases: Array<[string, unknown, number, string[]]> = [
      ['empty body', {}, 2002, ['/url', '/events']],
      ['missing url', { events: ['task.created'] }, 2002, ['/url']],
      ['missing events', { url: GOOD.url }, 2002, ['/events']],
      ['empty events', { ...GOOD, events: [] }, 2002, ['/events']],
      ['url not a string', { ...GOOD, url: 42 }, 2001, ['/url']],
      ['url not https', { ...GOOD, url: 'http://hooks.example.com/x' }, 2001, ['/url']],
      ['url malformed', { ...GOOD, url: 'hooks.example.com/x' }, 2001, ['/url']],
      ['url with credentials', { ...GOOD, url: 'https://user:pw@hooks.example.com/x' }, 2001, ['/url']],
      ['url over 2048 characters', { ...GOOD, url: long(2049) }, 2003, ['/url']],
      ['events not an array', { ...GOOD, events: 'task.created' }, 2001, ['/events']],
      ['unknown event type', { ...GOOD, events: ['task.created', 'task.processing'] }, 2001, ['/events/1']],
      ['event not a string', { ...GOOD, events: [7] }, 2001, ['/events/0']],
      ['duplicate events', { ...GOOD, events: ['balance.low', 'balance.low'] }, 2001, ['/events/1']],
      ['description over 200 characters', { ...GOOD, description: 'd'.repeat(201) }, 2003, ['/description']],
      ['description not a string', { ...GOOD, description: 5 }, 2001, ['/description']],
      ['enabled not a boolean', { ...GOOD, enabled: 'yes' }, 2001, ['/enabled']],
      ['unknown field', { ...GOOD, secret: 'whsec_mine' }, 2001, ['/secret']],
      ['body is an array', [GOOD], 2001, ['']],
      ['missing beats malformed', { url: 'ftp://x' }, 2002, ['/url', '/events']],
      ['private address (literal)', { ...GOOD, url: 'https://10.0.0.8/hook' }, 2003, ['/url']],
      ['private address (DNS)', { ...GOOD, url: 'https://internal.example.com/hook' }, 2003, ['/url']],
      ['loopback via localhost', { ...GOOD, url: 'https://localhost:8443/hook' }, 2003, ['/url']],
      ['loopback via localhost. (trailing dot)', { ...GOOD, url: 'https://localhost.:8443/hook' }, 2003, ['/url']],
      ['a host that does not resolve (.invalid)', { ...GOOD, url: 'https://hooks.invalid/x' }, 2003, ['/url']],
      ['cloud metadata address', { ...GOOD, url: 'https://169.254.169.254/latest' }, 2003, ['/url']],
      // IPv6 forms that carry a refused IPv4 address (engine/webhooks/ssrf.ts, embeddedIPv4).
      ...['::ffff:7f00:1', '::ffff:0:7f00:1', '::ffff:127.0.0.1', '0:0:0:0:0:ffff:7f00:1', '::7f00:1', '64:ff9b::7f00:1', '64:ff9b::10.0.0.1',
        '64:ff9b:1::7f00:1', '64:ff9b:1:7f00:0:100::', '2002:7f00:1::1', '2002:a9fe:a9fe::', '2001:0:4136:e378:8000:63bf:80ff:fffe']
        .map((ip): [string, unknown, number, string[]] => [`IPv6 ${ip}`, { ...GOOD, url: `https://[${ip}]/hook` }, 2003, ['/url']]),
    ];
    for (const [name, body, code, pointers] of cases) {
      it(`${name} → 400 / ${code}`, async () => {
        const res = await api.call('POST', '/v1/webhooks/endpoints', body);
        expect(res.status, JSON.stringify(res.body)).to.equal(400);
        expect(res.body.error_code).to.equal(code);
        expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).to.have.members(pointers);
        for (const e of res.body.errors) expect(e.detail).to.be.a('string').and.not.empty;
        expect((await api.call('GET', '/v1/webhooks/endpoints')).body.data).to.have.length(0);
      });
    }

    it('accepts the limits exactly: 2048-character URL, 200-character description', async () => {
      const res = await api.call('POST', '/v1/webhooks/endpoints', { ...GOOD, url: long(2048), description: 'é'.repeat(200) });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
    });

    it('malformed JSON → 400 / 2001', async () => {
      const res = await api.call('POST', '/v1/webhooks/endpoints', undefined, { raw: '{"url": ' });
      expect(res.status).to.equal(400);
      expect(res.body.error_code).to.equal(2001);
    });

    it('allows a loopback destination once the operator allow-lists it', async () => {
      const h2 = harness({ pool: stubPool(), config: { allow_private_cidrs: ['127.0.0.1/32'] } });
      const api2 = await startApi(h2);
      try {
        const res = await api2.call('POST', '/v1/webhooks/endpoints', { ...GOOD, url: 'https://localhost:8443/hook' });
        expect(res.status).to.equal(201);
        const refused = await api2.call('POST', '/v1/webhooks/endpoints', { ...GOOD, url: 'https://127.0.0.2/hook' });
        expect(refused.body.error_code).to.equal(2003);
      } finally {
        await api2.close();
        await h2.shutdown();
      }
    });
  });

  it('allows at most 5 endpoints per tenant (6th → 400 / 2003), per tenant', async () => {
    for (let i = 0; i < 5; i++) expect((await api.call('POST', '/v1/webhooks/endpoints', GOOD)).status).to.equal(201);
    const sixth = await api.call('POST', '/v1/webhooks/endpoints', GOOD);
    expect(sixth.status).to.equal(400);
    expect(sixth.body.error_code).to.equal(2003);
    expect(sixth.body.detail).to.match(/at most 5 webhook endpoints per tenant/i);
    expect(sixth.body.errors).to.have.length(1);
    expect((await api.call('GET', '/v1/webhooks/endpoints')).body.data).to.have.length(5);
    expect((await api.call('POST', '/v1/webhooks/endpoints', GOOD, { tenant: OTHER_TENANT })).status).to.equal(201);
    // Deleting one frees a place.
    const first = (await api.call('GET', '/v1/webhooks/endpoints')).body.data[0].id;
    expect((await api.call('DELETE', `/v1/webhooks/endpoints/${first}`)).body).to.deep.equal({ id: first, deleted: true });
    expect((await api.call('POST', '/v1/webhooks/endpoints', GOOD)).status).to.equal(201);
  });

  it('updates url, events, description and enabled', async () => {
    const { body: e } = await api.call('POST', '/v1/webhooks/endpoints', GOOD);
    const res = await api.call('PATCH', `/v1/webhooks/endpoints/${e.id}`, {
      url: 'https://hooks.example.com/v2', events: ['balance.low'], description: 'billing', enabled: false,
    });
    expect(res.status).to.equal(200);
    expect(res.body).to.include({ url: 'https://hooks.example.com/v2', description: 'billing', enabled: false, disabled_reason: 'disabled_by_user' });
    expect(res.body.events).to.deep.equal(['balance.low']);
    expect(res.body).to.not.have.property('secret');
    const back = await api.call('PATCH', `/v1/webhooks/endpoints/${e.id}`, { enabled: true, description: null });
    expect(back.body).to.include({ enabled: true, disabled_reason: null, description: null });
    expect(back.body.secret_preview).to.equal(e.secret_preview);

    const bad = await api.call('PATCH', `/v1/webhooks/endpoints/${e.id}`, { url: 'https://internal.example.com/x', events: [] });
    expect(bad.status).to.equal(400);
    expect(bad.body.error_code).to.equal(2002);
    const ssrf = await api.call('PATCH', `/v1/webhooks/endpoints/${e.id}`, { url: 'https://internal.example.com/x' });
    expect(ssrf.body.error_code).to.equal(2003);
    for (const url of ['https://localhost./x', 'https://gone.invalid/x']) {
      const refused = await api.call('PATCH', `/v1/webhooks/endpoints/${e.id}`, { url });
      expect([refused.status, refused.body.error_code, refused.body.errors[0].pointer], url).to.deep.equal([400, 2003, '/url']);
    }
    expect((await api.call('GET', `/v1/webhooks/endpoints/${e.id}`)).body.url).to.equal('https://hooks.example.com/v2');
  });

  it('rotates the secret: new full secret once, new preview', async () => {
    const { body: e } = await api.call('POST', '/v1/webhooks/endpoints', GOOD);
    const rotated = await api.call('POST', `/v1/webhooks/endpoints/${e.id}/rotate-secret`);
    expect(rotated.status).to.equal(200);
    expect(rotated.body.secret).to.match(/^whsec_[0-9A-Za-z]{32}$/);
    expect(rotated.body.secret).to.not.equal(e.secret);
    expect(rotated.body.secret_preview).to.equal(`whsec_...${rotated.body.secret.slice(-4)}`);
    expect((await h.store.getEndpoint(TENANT, e.id))?.secret).to.equal(rotated.body.secret);
    expect((await api.call('GET', `/v1/webhooks/endpoints/${e.id}`)).body.secret_preview).to.equal(rotated.body.secret_preview);
  });

  it("answers 404 / 2005 for unknown ids and for another tenant's endpoint", async () => {
    const { body: e } = await api.call('POST', '/v1/webhooks/endpoints', GOOD);
    const paths: Array<[string, string, unknown?]> = [
      ['GET', `/v1/webhooks/endpoints/${e.id}`],
      ['PATCH', `/v1/webhooks/endpoints/${e.id}`, { description: 'x' }],
      ['DELETE', `/v1/webhooks/endpoints/${e.id}`],
      ['POST', `/v1/webhooks/endpoints/${e.id}/rotate-secret`],
      ['POST', `/v1/webhooks/endpoints/${e.id}/test`],
      ['GET', `/v1/webhooks/endpoints/${e.id}/deliveries`],
    ];
    for (const [method, path, body] of paths) {
      const res = await api.call(method, path, body, { tenant: OTHER_TENANT });
      expect(res.status, `${method} ${path}`).to.equal(404);
      expect(res.body.error_code).to.equal(2005);
    }
    expect((await api.call('GET', '/v1/webhooks/endpoints/we_nope')).body.error_code).to.equal(2005);
    expect((await api.call('GET', '/v1/webhooks/deliveries/whd_nope')).body.error_code).to.equal(2005);
    expect((await api.call('POST', '/v1/webhooks/deliveries/whd_nope/resend')).body.error_code).to.equal(2005);
    // Still intact for its owner.
    expect((await api.call('GET', `/v1/webhooks/endpoints/${e.id}`)).body.description).to.equal(null);
  });

  it('requires console:read to read and console:create to change (403 / 1002)', async () => {
    const { body: e } = await api.call('POST', '/v1/webhooks/endpoints', GOOD);
    const reader = { scopes: 'console:read' };
    expect((await api.call('GET', '/v1/webhooks/endpoints', undefined, reader)).status).to.equal(200);
    expect((await api.call('GET', `/v1/webhooks/endpoints/${e.id}/deliveries`, undefined, reader)).status).to.equal(200);
    for (const [method, path] of [['POST', '/v1/webhooks/endpoints'], ['PATCH', `/v1/webhooks/endpoints/${e.id}`], ['DELETE', `/v1/webhooks/endpoints/${e.id}`], ['POST', `/v1/webhooks/endpoints/${e.id}/rotate-secret`], ['POST', `/v1/webhooks/endpoints/${e.id}/test`]] as const) {
      const res = await api.call(method, path, GOOD, reader);
      expect(res.status, `${method} ${path}`).to.equal(403);
      expect(res.body.error_code).to.equal(1002);
    }
    const none = await api.call('GET', '/v1/webhooks/endpoints', undefined, { scopes: 'provider_a:*' });
    expect(none.status).to.equal(403);
    expect((await api.call('GET', `/v1/webhooks/endpoints/${e.id}`)).body.enabled).to.equal(true);
  });

  it('sends a test event to one endpoint even if it does not subscribe to task.succeeded (202)', async () => {
    const { body: e } = await api.call('POST', '/v1/webhooks/endpoints', { ...GOOD, events: ['balance.low'] });
    const res = await api.call('POST', `/v1/webhooks/endpoints/${e.id}/test`);
    expect(res.status).to.equal(202);
    expect(res.body.event.id).to.match(/^evt_test_[0-9A-Za-z]{24}$/);
    expect(res.body.event.type).to.equal('task.succeeded');
    expect(res.body.event).to.not.have.property('tenant_id');
    expect(res.body.delivery.id).to.match(/^whd_/);
    expect(res.body.delivery).to.include({ endpoint_id: e.id, event_id: res.body.event.id, test: true });
    const done = await waitFor(async () => {
      const d = (await api.call('GET', `/v1/webhooks/deliveries/${res.body.delivery.id}`)).body;
      return d.status === 'succeeded' && d;
    });
    expect(done.payload.data.payload.task_info.status).to.equal('completed');
    expect(done.attempts).to.have.length(1);

    await api.call('PATCH', `/v1/webhooks/endpoints/${e.id}`, { enabled: false });
    const refused = await api.call('POST', `/v1/webhooks/endpoints/${e.id}/test`);
    expect(refused.status).to.equal(409);
  });

  it('validates list paging parameters', async () => {
    const { body: e } = await api.call('POST', '/v1/webhooks/endpoints', GOOD);
    expect((await api.call('GET', `/v1/webhooks/endpoints/${e.id}/deliveries?limit=abc`)).body.error_code).to.equal(2001);
    expect((await api.call('GET', `/v1/webhooks/endpoints/${e.id}/deliveries?limit=0`)).body.error_code).to.equal(2003);
    expect((await api.call('GET', `/v1/webhooks/endpoints/${e.id}/deliveries?limit=101`)).body.error_code).to.equal(2003);
    expect((await api.call('GET', `/v1/webhooks/endpoints/${e.id}/deliveries?limit=100`)).status).to.equal(200);
  });
});

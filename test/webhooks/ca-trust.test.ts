// Which receivers a delivery trusts: what Node itself trusts (its bundled roots plus
// NODE_EXTRA_CA_CERTS, the standard way to add a private CA) and, on top, webhooks.ca_pem.
// NODE_EXTRA_CA_CERTS is read once at process start, so each case runs a real `gateway serve`
// child process with its own environment, delivering a test event to real HTTPS receivers.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, DEMO_KEY, NO_LIMITS, ROOT } from '../helpers/gateway.ts';
import { ADMIN, spawnGateway, tenantWithKey, type GatewayProcess } from '../redis/support.ts';
import { waitFor } from './support/harness.ts';
import { testPki } from './support/pki.ts';
import { Receiver } from './support/receiver.ts';

describe('webhook deliveries trust Node\'s CA store plus webhooks.ca_pem', function () {
  this.timeout(30_000);
  let dir: string;
  let ours: Receiver; // certificate from the test CA
  let stray: Receiver; // certificate from an unrelated CA
  // One gateway process per way of trusting the test CA, started together.
  let viaNode: GatewayProcess; // NODE_EXTRA_CA_CERTS only
  let viaConfig: GatewayProcess; // webhooks.ca_pem only
  let viaBoth: GatewayProcess; // NODE_EXTRA_CA_CERTS for one CA, webhooks.ca_pem (a file) for the other

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-ca-'));
    writeFileSync(join(dir, 'ca.pem'), testPki().caPem);
    writeFileSync(join(dir, 'stray-ca.pem'), testPki().strayCaPem);
    ours = await Receiver.start();
    stray = await Receiver.start(() => ({ status: 200 }), { stray: true });
    [viaNode, viaConfig, viaBoth] = await Promise.all([
      start({ extraCaFile: join(dir, 'ca.pem'), caPem: [] }),
      start({ caPem: [testPki().caPem] }),
      start({ extraCaFile: join(dir, 'ca.pem'), caPem: [join(dir, 'stray-ca.pem')] }),
    ]);
  });
  after(async () => {
    for (const gw of [viaNode, viaConfig, viaBoth]) if (gw) expect(await gw.stop(), gw.output().slice(-2000)).to.equal(0);
    await ours.close();
    await stray.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A one-process gateway (memory store, sandbox) whose deliveries try once, with no retries. */
  async function start(o: { extraCaFile?: string; caPem: string[] }): Promise<GatewayProcess> {
    const file = join(dir, `config-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, `
server: { host: 127.0.0.1, port: 0, shutdown_grace_ms: 2000 }
metrics: { port: 0 }
store: { kind: memory }
sandbox: { enabled: true, demo_api_key: ${DEMO_KEY} }
admin: { token: ${ADMIN} }
timing: { scale: 0.01 }
log: { level: info }
vendors: { dir: ${JSON.stringify(join(ROOT, 'vendors'))}, enabled: [provider_b] }
${NO_LIMITS}
webhooks: { allow_private_cidrs: ["127.0.0.1/32"], retry_schedule_ms: [], ca_pem: ${JSON.stringify(o.caPem)} }
`);
    // The test's own NODE_EXTRA_CA_CERTS (if any) must not leak into the case.
    return spawnGateway(file, 'all', undefined, { NODE_EXTRA_CA_CERTS: o.extraCaFile });
  }

  /** Sends the endpoint's test event to `rx` and answers how the one attempt ended. */
  async function deliver(g: GatewayProcess, rx: Receiver): Promise<{ status: string; error: string | null }> {
    const { key } = await tenantWithKey(g.url);
    const ep = await call(g.url, 'POST', '/v1/webhooks/endpoints', { key, body: { url: rx.url('/ca'), events: ['task.succeeded'] } });
    expect(ep.status, ep.text).to.equal(201);
    const sent = await call(g.url, 'POST', `/v1/webhooks/endpoints/${ep.body.id}/test`, { key });
    expect(sent.status, sent.text).to.equal(202);
    const d = await waitFor(async () => {
      const r = await call(g.url, 'GET', `/v1/webhooks/deliveries/${sent.body.delivery.id}`, { key });
      return r.body.status !== 'pending' && r.body;
    }, 10_000, 'the delivery to end');
    return { status: d.status, error: d.attempts[0]?.error ?? null };
  }

  it('trusts a private CA given the standard Node way (NODE_EXTRA_CA_CERTS), and not an unrelated one', async () => {
    expect(await deliver(viaNode, ours)).to.deep.equal({ status: 'succeeded', error: null });
    const refused = await deliver(viaNode, stray);
    expect(refused.status).to.equal('failed');
    expect(refused.error).to.match(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|certificate/i);
  });

  it('trusts webhooks.ca_pem, and still not an unrelated CA', async () => {
    expect(await deliver(viaConfig, ours)).to.deep.equal({ status: 'succeeded', error: null });
    const refused = await deliver(viaConfig, stray);
    expect(refused.status).to.equal('failed');
    expect(refused.error).to.match(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|certificate/i);
  });

  it('trusts both together: NODE_EXTRA_CA_CERTS and a webhooks.ca_pem file', async () => {
    expect(await deliver(viaBoth, ours)).to.deep.equal({ status: 'succeeded', error: null });
    expect(await deliver(viaBoth, stray)).to.deep.equal({ status: 'succeeded', error: null });
  });
});

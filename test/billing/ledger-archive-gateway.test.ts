// The ledger archive inside a running gateway (either store): the ledger.archive job moves lines
// past store.ledger_retention_hours to segments on the result backend, and GET /v1/ledger (every
// page, by cursor) and its CSV export answer the same bytes before and after.
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import type { Gateway } from '../../engine/gateway.ts';
import { parseSegment } from '../../engine/billing/ledger-archive.ts';
import { call, newTenant, startTestGateway, STORE_MODE } from '../helpers/gateway.ts';

describe(`ledger archive in a gateway (${STORE_MODE})`, function () {
  this.timeout(60_000);
  let gw: Gateway;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-ledger-gw-'));
    const kind = STORE_MODE === 'redis' ? `kind: redis, redis_url: "${process.env.GATEWAY_TEST_REDIS_URL}", key_prefix: "arch${process.pid}"` : 'kind: memory';
    // Lines leave after 1.8 s; the job runs every 200 ms (20 s scaled by 0.01).
    gw = await startTestGateway({ scale: 0.01, store: `{ ${kind}, ledger_retention_hours: 0.0005, ledger_archive_interval_ms: 20000 }`, yaml: `results: { store: local, local: { dir: "${dir}" } }` });
  });
  after(async () => {
    await gw?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function pages(key: string): Promise<unknown[]> {
    const out: unknown[] = [];
    let cursor = '';
    do {
      const page = await call(gw.url, 'GET', `/v1/ledger?limit=7${cursor ? `&cursor=${cursor}` : ''}`, { key });
      expect(page.status).to.equal(200);
      out.push(page.body);
      cursor = (page.body as { next_cursor: string | null }).next_cursor ?? '';
    } while (cursor);
    return out;
  }

  it('moves the lines past the retention and answers the same pages and CSV', async () => {
    const { tenant, key } = await newTenant(gw);
    for (let i = 0; i < 40; i++) await gw.billing.topUp(tenant.id, 1000 + i, `pay-${i}`, `top-up ${i}`);
    const before = await pages(key);
    const csv = await fetch(`${gw.url}/v1/ledger?format=csv`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.text());
    expect(csv.split('\r\n')).to.have.length(43); // header, 41 lines, the final CRLF
    let archived = 0;
    for (let i = 0; i < 100 && archived < 41; i++) {
      await new Promise((r) => setTimeout(r, 100));
      archived = 0;
      for await (const f of gw.results!.backend.list(`ledger/${tenant.id}/`)) archived += parseSegment(await text(await gw.results!.backend.read(f.key))).length;
    }
    expect(archived, 'every line moved to the archive').to.equal(41);
    expect(await pages(key)).to.deep.equal(before);
    expect(await fetch(`${gw.url}/v1/ledger?format=csv`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.text())).to.equal(csv);
    expect(await gw.billing.checkInvariant(tenant.id)).to.include({ ok: true });
    // New lines after the move page on top of the archived ones.
    await gw.billing.topUp(tenant.id, 5, 'pay-late');
    const after = (await call(gw.url, 'GET', '/v1/ledger?limit=3', { key })).body as { data: { seq: number }[] };
    expect(after.data.map((e) => e.seq)).to.deep.equal([42, 41, 40]);
  });
});

// Never submit twice to a provider that cannot dedupe (docs/decisions.md): a gateway process is
// killed (SIGKILL) while the provider holds its submission's answer, so the task was sent and its
// answer never recorded. Another process's sweep finds it:
//  - the descriptor declares no idempotency header: the task fails with 4010, its hold is
//    released, and the provider got exactly one submission;
//  - the descriptor declares one the provider honours: it is sent again with the same key (the
//    task id), the provider keeps one task, and it completes, settled once.
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, ROOT } from '../helpers/gateway.ts';
import { startRedis } from '../helpers/redis.ts';
import { countingImageToolUpstream, type CountingUpstream } from './image-tool-upstream.ts';
import { ledger, spawnGateway, tenantWithKey, writeConfig } from './support.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** provider_b in a folder of its own, declaring Idempotency-Key as its submissions' idempotency header. */
function dedupingVendors(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-idem-vendors-'));
  cpSync(join(ROOT, 'vendors', 'provider_b.yaml'), join(dir, 'provider_b.yaml'));
  cpSync(join(ROOT, 'vendors', 'provider_b'), join(dir, 'provider_b'), { recursive: true });
  const file = join(dir, 'provider_b.yaml');
  writeFileSync(file, readFileSync(file, 'utf8').replace('  timeout_ms: 15000\n', '  timeout_ms: 15000\n  submit_idempotency_header: Idempotency-Key\n'));
  return dir;
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ; await sleep(50)) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
  }
}

/** Create a task on A, kill A while the provider holds the submission, and follow the task on B to its end. */
async function killMidSubmission(up: CountingUpstream, vendorsDir?: string) {
  const redis = await startRedis();
  const config = writeConfig({ redisUrl: redis.url, prefix: 'su', upstreamUrl: up.url, vendorsDir });
  const a = await spawnGateway(config, 'all');
  const b = await spawnGateway(config, 'all');
  try {
    const { tenantId, key } = await tenantWithKey(b.url);
    const prompt = `killed mid-submission ${Math.random()}`;
    up.submitDelayMs = 1500;
    const created = await call(a.url, 'POST', IMAGES, { key, body: { prompt } });
    expect(created.status).to.equal(202);
    const id: string = created.body.task_info.id;
    await until('the provider received the submission', 10_000, async () => (up.submits.get(prompt) ? true : undefined));
    await a.kill9();
    up.submitDelayMs = 0; // a second submission is answered at once
    const started = Date.now();
    const ended = await until('the task ended on B', 60_000, async () => {
      const r = await call(b.url, 'GET', `${IMAGES}/${id}`, { key });
      return ['completed', 'failed'].includes(r.body?.task_info?.status) ? r.body.task_info : undefined;
    });
    const seconds = (Date.now() - started) / 1000;
    await sleep(1000); // a second submission would arrive now
    const lines = (await ledger(b.url, tenantId)).filter((e) => e.ref === id).map((e) => e.kind).reverse();
    return { ended, submissions: up.submits.get(prompt), keys: [...up.keys.keys()].filter((k) => k === id).length, lines, seconds };
  } finally {
    up.submitDelayMs = 0;
    await Promise.allSettled([a.stop(), b.stop()]);
    await redis.stop();
  }
}

describe('redis mode: a submission killed mid-flight is never sent twice to a provider that cannot dedupe', function () {
  this.timeout(120_000);
  let up: CountingUpstream;
  before(async () => {
    up = await countingImageToolUpstream().start();
  });
  after(async () => up.close());

  it('no idempotency header declared: one submission, the task failed with 4010 and its hold released', async () => {
    const r = await killMidSubmission(up);
    console.log(`      no header: ${r.submissions} submission(s) at the provider; task ${r.ended.status} ${r.ended.error?.code} after ${r.seconds.toFixed(1)} s; ledger ${r.lines.join(', ')}`);
    expect(r.submissions).to.equal(1);
    expect(r.ended.status).to.equal('failed');
    expect(r.ended.error).to.include({ code: 4010, title: 'Submission Outcome Unknown' });
    expect(r.lines).to.deep.equal(['hold', 'release']);
  });

  it('an idempotency header the provider honours: sent again with the same key, one task at the provider, completed and settled once', async () => {
    const r = await killMidSubmission(up, dedupingVendors());
    console.log(`      with header: ${r.submissions} submission(s) under ${r.keys} key at the provider; task ${r.ended.status} ${JSON.stringify(r.ended.error ?? null)} after ${r.seconds.toFixed(1)} s; ledger ${r.lines.join(', ')}`);
    expect(r.submissions).to.equal(2);
    expect(r.keys).to.equal(1);
    expect(r.ended.status).to.equal('completed');
    expect(r.lines).to.deep.equal(['hold', 'settle']);
  });
});

// Issue 29, shown through real `gateway serve` processes on a real redis-server:
//  - Redis refusing writes (OOM: maxmemory 1 under noeviction; READONLY: a replica of a master
//    that does not exist) under a create and chat load on two processes: 0 × 500, every refusal
//    503 / 4003 with Retry-After and a problem body, /readyz 503 on both during the fault and 200
//    after, and each repeated failure logged at most once a second (with a count);
//  - 200 wrong API keys from one address (127.0.0.2, spread over both processes) get a 429 within
//    the configured count, while a valid key from another address (127.0.0.3) keeps working;
//  - a limit override changed on one process is seen by the other within 1 s.
import { expect } from 'chai';
import { Agent, request } from 'undici';
import { FakeOpenAI } from '../chat/fake-openai.ts';
import { freePort } from '../helpers/net.ts';
import { startGatewayPair, type GatewayPair } from '../helpers/gateway-pair.ts';
import { countingImageToolUpstream, type CountingUpstream } from './image-tool-upstream.ts';
import { admin, tenantWithKey, type GatewayProcess } from './support.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const CHAT = '/v1/chat/completions';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  at: number;
  status: number;
  code?: number;
  retryAfter: string | null;
  contentType: string | null;
}

/** A client bound to one loopback address, so the gateways see requests from it. */
function from(address: string): Agent {
  return new Agent({ localAddress: address });
}

async function send(base: string, path: string, init: { method?: string; key?: string; body?: unknown; agent?: Agent } = {}): Promise<Answer> {
  const at = Date.now();
  const res = await request(`${base}${path}`, {
    method: (init.method ?? 'GET') as 'GET',
    headers: { ...(init.key ? { authorization: `Bearer ${init.key}` } : {}), ...(init.body ? { 'content-type': 'application/json' } : {}) },
    body: init.body ? JSON.stringify(init.body) : undefined,
    dispatcher: init.agent,
  });
  const text = await res.body.text();
  let code: number | undefined;
  try {
    code = (JSON.parse(text) as { error_code?: number }).error_code;
  } catch {
    code = undefined;
  }
  const header = (n: string) => (res.headers[n] === undefined ? null : String(res.headers[n]));
  return { at, status: res.statusCode, code, retryAfter: header('retry-after'), contentType: header('content-type') };
}

interface LogLine {
  level: number;
  time: string;
  msg: string;
  repeated?: number;
  /** The throttle's group of the line (engine/log/throttle.ts). */
  error_kind?: string;
  err?: { type?: string; code?: number | string; message?: string };
}

function warnings(p: GatewayProcess): LogLine[] {
  return p.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine).filter((l) => l.level >= 40);
}

describe('redis mode: store faults, credential guessing and overrides across two processes', function () {
  this.timeout(180_000);
  let up: CountingUpstream;
  let chat: FakeOpenAI;
  let pair: GatewayPair;
  let a: GatewayProcess;
  let b: GatewayProcess;
  before(async () => {
    up = await countingImageToolUpstream().start();
    chat = await new FakeOpenAI().start();
    pair = await startGatewayPair({ prefix: 'sf', upstreamUrl: up.url, chatUrl: chat.url, chatKey: 'sk-upstream-test' });
    ({ a, b } = pair);
  });
  after(async () => {
    await pair?.stop();
    await up?.close();
    await chat?.close();
  });

  const faults: Array<[string, () => Promise<unknown>, () => Promise<unknown>]> = [
    ['OOM', () => pair.control.config('SET', 'maxmemory', '1'), () => pair.control.config('SET', 'maxmemory', '0')],
    ['READONLY', async () => pair.control.call('REPLICAOF', '127.0.0.1', String(await freePort())), () => pair.control.call('REPLICAOF', 'NO', 'ONE')],
  ];
  for (const [name, inject, lift] of faults) {
    it(`${name} under create and chat load: 503 / 4003 + Retry-After, never 500; /readyz 503 then 200; a log line a second at most`, async () => {
      const { key } = await tenantWithKey(a.url);
      const answers: Answer[] = [];
      const ready: Array<{ at: number; gw: string; status: number }> = [];
      let stop = false;
      const load = Array.from({ length: 8 }, async (_, c) => {
        for (let i = 0; !stop; i++) {
          const gw = (c + i) % 2 ? a : b;
          answers.push(c % 2
            ? await send(gw.url, IMAGES, { method: 'POST', key, body: { prompt: `fault ${c}/${i}` } })
            : await send(gw.url, CHAT, { method: 'POST', key, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } }));
        }
      });
      const probes = (async () => {
        while (!stop) {
          for (const gw of [a, b]) ready.push({ at: Date.now(), gw: gw.url, status: (await send(gw.url, '/readyz')).status });
          await sleep(100);
        }
      })();
      await sleep(1000);
      const start = Date.now();
      await inject();
      await sleep(2500);
      await lift();
      const end = Date.now();
      // The load runs on until both processes answer /readyz 200 three times in a row a second
      // after the lift and more than five requests were accepted after 1.5 s (what is asserted
      // below), up to 15 s: how soon a recovery shows on a busy machine is the machine's, and a
      // fixed 2.5 s would measure it.
      const recovered = () =>
        answers.filter((x) => x.at > end + 1500 && x.status < 300).length > 5 &&
        [a, b].every((gw) => ready.filter((r) => r.gw === gw.url && r.at > end + 1000).slice(-3).filter((r) => r.status === 200).length === 3);
      for (const until = Date.now() + 15_000; !recovered() && Date.now() < until;) await sleep(100);
      stop = true;
      await Promise.all([...load, probes]);

      const during = answers.filter((x) => x.at >= start && x.at < end);
      const refused = answers.filter((x) => x.status !== 200 && x.status !== 202);
      const fig = `${answers.length} answers: ${answers.filter((x) => x.status < 300).length} accepted, ${refused.length} refused (${during.length} sent during the fault)`;
      console.log(`      ${name}: ${fig}`);
      for (const x of refused) {
        expect([x.status, x.code], `${name}: ${JSON.stringify(x)}`).to.deep.equal([503, 4003]);
        expect(x.retryAfter, name).to.match(/^\d+$/);
        expect(x.contentType, name).to.match(/^application\/problem\+json/);
      }
      expect(refused.length, `${name}: refusals`).to.be.greaterThan(5);
      expect(answers.filter((x) => x.at > end + 1500 && x.status < 300).length, `${name}: accepted after`).to.be.greaterThan(5);
      // /readyz on both: 503 during the fault, 200 after.
      for (const gw of [a, b]) {
        const mine = ready.filter((r) => r.gw === gw.url);
        expect(mine.filter((r) => r.at > start + 300 && r.at < end).some((r) => r.status === 503), `${name}: /readyz 503 during, ${gw.url}`).to.equal(true);
        // 200 again once the store takes writes (the last readings: a probe on a loaded machine may be late once).
        expect(mine.filter((r) => r.at > end + 1000).slice(-3).map((r) => r.status), `${name}: /readyz after, ${gw.url}`).to.deep.equal([200, 200, 200]);
      }
      // Each repeated failure at most once a second per process, with a count.
      for (const gw of [a, b]) {
        const lines = warnings(gw).filter((l) => Date.parse(l.time) >= start - 100);
        expect(lines.filter((l) => l.msg === 'unhandled error'), `${name}: unhandled errors`).to.deep.equal([]);
        const last = new Map<string, number>();
        for (const l of lines) {
          // The throttle's groups: level, message and the kind it names (its error's code or class
          // and Redis reply word, and its cause's: one message may have several). A line written
          // past the throttle names none: its error's type, code and reply word stand in.
          const reply = /(?:^|: )([A-Z]{3,})\b/.exec(l.err?.message ?? '')?.[1] ?? '';
          const group = `${l.level} ${l.msg} ${l.error_kind ?? `${l.err?.type ?? ''} ${l.err?.code ?? ''} ${reply}`}`;
          const t = Date.parse(l.time);
          const prev = last.get(group);
          expect(prev === undefined || t - prev >= 950, `${name}: "${group}" twice within a second (${prev} → ${t})`).to.equal(true);
          last.set(group, t);
        }
        const held = lines.reduce((n, l) => n + (l.repeated ?? 0), 0);
        console.log(`      ${name} ${gw === a ? 'A' : 'B'}: ${lines.length} warning/error lines over the fault (${held} more held back and counted)`);
      }
    });
  }

  it('200 wrong API keys from one address get a 429 within the count (10), on both processes together; a valid key from another address keeps working', async () => {
    const { key } = await tenantWithKey(a.url);
    const guesser = from('127.0.0.2');
    const honest = from('127.0.0.3');
    const statuses: number[] = [];
    for (let i = 0; i < 200; i++) {
      const r = await send((i % 2 ? a : b).url, '/v1/balance', { key: `gw_live_guess_${i}`, agent: guesser });
      statuses.push(r.status);
      if (r.status === 429) {
        expect(r.code).to.equal(1006);
        expect(Number(r.retryAfter)).to.be.greaterThan(0);
      }
      if (i % 25 === 0) for (const gw of [a, b]) expect((await send(gw.url, '/v1/balance', { key, agent: honest })).status, `valid key after ${i} guesses`).to.equal(200);
    }
    const first429 = statuses.indexOf(429) + 1;
    console.log(`      first 429 at guess ${first429}; ${statuses.filter((s) => s === 429).length} × 429, ${statuses.filter((s) => s === 401).length} × 401`);
    expect(first429).to.be.within(1, 10);
    expect(statuses.slice(first429 - 1).every((s) => s === 429), 'every guess after the first 429').to.equal(true);
    await Promise.all([guesser.close(), honest.close()]);
  });

  it('a limit override changed on one process is seen by the other within 1 s', async () => {
    const { tenantId } = await tenantWithKey(a.url);
    const seen: number[] = [];
    for (let round = 1; round <= 5; round++) {
      expect((await admin(b.url, 'GET', `/tenants/${tenantId}/limits`)).concurrent_tasks).to.not.equal(100 + round);
      await admin(a.url, 'PUT', `/tenants/${tenantId}/limits`, { concurrent_tasks: 100 + round });
      const t0 = Date.now();
      // Timed by when each read was sent: one sent within the second may answer after it.
      for (;;) {
        const sent = Date.now() - t0;
        if ((await admin(b.url, 'GET', `/tenants/${tenantId}/limits`)).concurrent_tasks === 100 + round) {
          seen.push(sent);
          break;
        }
        expect(sent, `round ${round}`).to.be.below(1000);
        await sleep(10);
      }
    }
    console.log(`      seen on the other process after ${seen.join(', ')} ms`);
    expect(Math.max(...seen)).to.be.below(1000);
  });
});

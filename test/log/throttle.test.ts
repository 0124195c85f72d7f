// engine/log/throttle.ts: a repeated failure is written at most once per interval per kind
// (level, message, the error's code / Redis reply / class), and what was held back is counted on
// the next line of its kind, or on its own once the interval is over.
import { expect } from 'chai';
import pino from 'pino';
import { Writable } from 'node:stream';
import { ThrottledLog } from '../../engine/log/throttle.ts';
import { dependencyUnavailable } from '../../engine/errors/gateway-error.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function capture(): { lines: Array<Record<string, unknown>>; log: ThrottledLog } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(JSON.parse(String(chunk)) as Record<string, unknown>), done()) });
  return { lines, log: new ThrottledLog(pino({ level: 'info' }, sink), 200) };
}

describe('log throttle', () => {
  it('1,000 identical failures in a burst: one line at once, one with the count after the interval', async () => {
    const { lines, log } = capture();
    for (let i = 0; i < 1000; i++) log.error({ err: dependencyUnavailable('store'), job_id: String(i) }, 'job failed');
    await sleep(10);
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ msg: 'job failed', job_id: '0' });
    expect(lines[0]).to.not.have.property('repeated');
    await sleep(250);
    expect(lines).to.have.length(2);
    expect(lines[1]).to.include({ msg: 'job failed', job_id: '999', repeated: 998 });
  });

  it('a different kind of failure gets its own line at once', async () => {
    const { lines, log } = capture();
    const oom = Object.assign(new Error('OOM command not allowed'), { name: 'ReplyError' });
    const readonly = Object.assign(new Error("READONLY You can't write against a read only replica."), { name: 'ReplyError' });
    log.warn({ err: oom }, 'job failed');
    log.warn({ err: readonly }, 'job failed');
    log.warn({ err: oom }, 'job failed');
    log.warn({ err: oom }, 'another message');
    log.error({ err: oom }, 'job failed');
    await sleep(10);
    expect(lines.map((l) => [l.level, l.msg, (l.err as { message: string }).message.slice(0, 3)])).to.deep.equal([
      [40, 'job failed', 'OOM'], [40, 'job failed', 'REA'], [40, 'another message', 'OOM'], [50, 'job failed', 'OOM'],
    ]);
    log.flushAll(); // the held OOM warning goes out, as itself
    expect(lines).to.have.length(5);
    expect(lines.at(-1)).to.include({ msg: 'job failed', level: 40 }).and.not.have.property('repeated');
  });

  it('a steady stream: at most one line per interval, every occurrence counted', async () => {
    const { lines, log } = capture();
    for (let i = 0; i < 50; i++) {
      log.warn({ err: dependencyUnavailable('store') }, 'task submission failed');
      await sleep(20);
    }
    await sleep(250);
    // Every occurrence is a line or in a line's count.
    const total = lines.reduce((n, l) => n + 1 + ((l.repeated as number | undefined) ?? 0), 0);
    expect(total).to.equal(50);
    expect(lines.length).to.be.within(4, 8); // ~1 s of occurrences at one line per 200 ms
  });
});

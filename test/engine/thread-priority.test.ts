// Background threads yield the CPU to the event loop: V8's platform threads (GC helpers) are
// lowered when a gateway starts. Linux only (a thread's nice value is its own there).
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { BACKGROUND_NICE } from '../../engine/util/thread-priority.ts';
import { startTestGateway } from '../helpers/gateway.ts';

/** nice value of each of this process's threads named `name` (/proc/<tid>/stat field 19). */
function niceOf(name: string): number[] {
  return threads(name).map((tid) => Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]));
}

function threads(name: string): string[] {
  return readdirSync('/proc/self/task').filter((tid) => readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === name);
}

describe('thread priorities', () => {
  before(function () {
    if (process.platform !== 'linux') this.skip();
  });

  it("a started gateway runs V8's helper threads at the background nice value, the event loop at its own", async () => {
    // Earlier gateways in this process lowered them already: raise them back first where
    // allowed (root, as in CI), so that this start is what lowers them.
    for (const tid of threads('V8Worker')) {
      try {
        setPriority(Number(tid), 0);
      } catch {
        /* not allowed to raise a priority: the assertion below still holds */
      }
    }
    const gw = await startTestGateway();
    try {
      const helpers = niceOf('V8Worker');
      expect(helpers.length).to.be.greaterThan(0);
      expect(helpers.every((n) => n === BACKGROUND_NICE)).to.equal(true, `V8Worker nice values: ${helpers}`);
      expect(niceOf('MainThread')).to.deep.equal([0]);
    } finally {
      await gw.close();
    }
  });
});

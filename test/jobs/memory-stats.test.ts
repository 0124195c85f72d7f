// The memory job scheduler's stats (gateway_job_queue_depth): a queue that empties reads zero
// rather than disappearing, which would leave its last depth on the gauge.
import { expect } from 'chai';
import { MemoryJobScheduler } from '../../engine/store/memory/job-scheduler.ts';

describe('memory job scheduler stats', () => {
  it('lists every handled queue, with zeros once it has emptied', async () => {
    const s = new MemoryJobScheduler();
    let ran = 0;
    s.handle('q', async () => {
      ran++;
    });
    await s.schedule('q', 'a', {}, 1);
    expect(await s.stats()).to.deep.equal([{ queue: 'q', due: 0, delayed: 1, lagSeconds: 0 }]);
    for (let i = 0; ran === 0 && i < 200; i++) await new Promise((r) => setTimeout(r, 5));
    expect(await s.stats()).to.deep.equal([{ queue: 'q', due: 0, delayed: 0, lagSeconds: 0 }]);
    await s.close();
  });
});

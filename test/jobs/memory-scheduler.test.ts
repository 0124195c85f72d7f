// The memory job scheduler: one timer over a due-time queue. Jobs run in due order (first come,
// first served at the same time), a job id waiting is scheduled once, jobs that fall due together
// start RUN_BATCH per turn with I/O served between batches, and close drops what waits.
import { expect } from 'chai';
import { MemoryJobScheduler, RUN_BATCH } from '../../engine/store/memory/job-scheduler.ts';
import { waitFor } from '../helpers/wait.ts';

describe('memory job scheduler', () => {
  it('runs jobs in due order, those due together in the order they were scheduled', async () => {
    const s = new MemoryJobScheduler();
    const ran: string[] = [];
    s.handle('q', async (p) => void ran.push(String(p.id)));
    await s.schedule('q', 'c', { id: 'c' }, 60);
    await s.schedule('q', 'a', { id: 'a' }, 10);
    await s.schedule('q', 'b1', { id: 'b1' }, 30);
    await s.schedule('q', 'b2', { id: 'b2' }, 30);
    await s.schedule('q', 'now', { id: 'now' }, 0);
    await waitFor(() => ran.length === 5, 2000, 'five jobs run');
    expect(ran).to.deep.equal(['now', 'a', 'b1', 'b2', 'c']);
    await s.close();
  });

  it('schedules a job id that is waiting once, and again once it has started', async () => {
    const s = new MemoryJobScheduler();
    let ran = 0;
    s.handle('q', async () => void ran++);
    await s.schedule('q', 'x', {}, 5);
    await s.schedule('q', 'x', {}, 5);
    await waitFor(() => ran === 1, 2000, 'the job run once');
    await new Promise((r) => setTimeout(r, 20));
    expect(ran).to.equal(1);
    await s.schedule('q', 'x', {}, 0);
    await waitFor(() => ran === 2, 2000, 'the job run again');
    expect(ran).to.equal(2);
    await s.close();
  });

  it('starts at most RUN_BATCH due jobs per turn, serving I/O between batches', async () => {
    const s = new MemoryJobScheduler();
    const turns: number[] = [];
    let turn = 0;
    s.handle('q', async () => void turns.push(turn));
    const n = RUN_BATCH * 3 + 5;
    for (let i = 0; i < n; i++) await s.schedule('q', `j${i}`, {}, 5);
    // A stand-in for the loop's I/O: counts the loop's turns while the batches run.
    const ticker = setInterval(() => turn++, 0);
    const tick = () => setImmediate(() => (turn++, turns.length < n && tick()));
    tick();
    await waitFor(() => turns.length === n, 2000, 'every job run');
    clearInterval(ticker);
    const perTurn = new Map<number, number>();
    for (const t of turns) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
    expect(turns).to.have.length(n);
    expect(Math.max(...perTurn.values())).to.be.at.most(RUN_BATCH);
    expect(perTurn.size).to.be.at.least(4);
    await s.close();
  });

  it('a job scheduled earlier than the armed timer runs first; close drops what waits', async () => {
    const s = new MemoryJobScheduler();
    const ran: string[] = [];
    s.handle('q', async (p) => void ran.push(String(p.id)));
    await s.schedule('q', 'late', { id: 'late' }, 200);
    await s.schedule('q', 'soon', { id: 'soon' }, 5);
    await waitFor(() => ran.length === 1, 2000, 'the sooner job run');
    expect(ran).to.deep.equal(['soon']);
    await s.close();
    await new Promise((r) => setTimeout(r, 250));
    expect(ran).to.deep.equal(['soon']);
    expect(await s.stats()).to.deep.equal([{ queue: 'q', due: 0, delayed: 0, lagSeconds: 0 }]);
  });
});

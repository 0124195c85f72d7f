import { expect } from 'chai';
import { ExpiryQueue } from '../../engine/store/memory/expiry-queue.ts';

describe('memory expiry queue', () => {
  it('a count bound: the oldest go first, in order, across the ring growing and wrapping', () => {
    const q = new ExpiryQueue<number>(0, { now: () => 0 }, 'ttlMs', 40);
    const forgotten: number[] = [];
    // 1,000 keys through a bound of 40: the ring grows past 16 slots, then wraps at 64 many times.
    for (let i = 0; i < 1000; i++) {
      q.add(i);
      q.expire((k) => forgotten.push(k));
      expect(q.size).to.equal(Math.min(i + 1, 40));
    }
    expect(forgotten).to.deep.equal(Array.from({ length: 960 }, (_, i) => i));
  });

  it('a TTL: keys go when due, oldest first, and the count bound still applies', () => {
    let now = 0;
    const q = new ExpiryQueue<string>(100, { now: () => now }, 'ttlMs', 30);
    const forgotten: string[] = [];
    for (let i = 0; i < 50; i++) {
      now = i;
      q.add(`k${i}`);
    }
    q.expire((k) => forgotten.push(k));
    expect(forgotten).to.deep.equal(Array.from({ length: 20 }, (_, i) => `k${i}`)); // past the bound of 30
    now = 124; // due: those added at 0..24
    q.expire((k) => forgotten.push(k));
    expect(forgotten.slice(20)).to.deep.equal(['k20', 'k21', 'k22', 'k23', 'k24']);
    expect(q.size).to.equal(25);
    // Keys added after a wrap keep their own times.
    for (let i = 50; i < 70; i++) {
      now = 200 + i;
      q.add(`k${i}`);
      q.expire((k) => forgotten.push(k));
    }
    expect(forgotten.at(-1)).to.equal('k49');
    expect(q.size).to.equal(20);
    now = 10_000;
    q.expire((k) => forgotten.push(k));
    expect(q.size).to.equal(0);
    expect(forgotten.slice(-20)).to.deep.equal(Array.from({ length: 20 }, (_, i) => `k${50 + i}`));
  });

  it('neither a TTL nor a bound: nothing is held', () => {
    const q = new ExpiryQueue<string>(0, { now: () => 0 });
    q.add('a');
    expect(q.size).to.equal(0);
  });
});

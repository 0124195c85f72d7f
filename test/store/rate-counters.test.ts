import { expect } from 'chai';
import { MemoryWindowCounters } from '../../engine/store/memory/rate-counters.ts';

describe('memory rate counters', () => {
  it('count per id and window, give back, and forget windows older than the previous one', () => {
    const c = new MemoryWindowCounters();
    expect([c.add('a', 10), c.add('a', 10), c.add('b', 10), c.add('a', 10)]).to.deep.equal([1, 2, 1, 3]);
    c.remove('a', 10);
    expect(c.add('a', 10)).to.equal(3);
    c.remove('b', 10);
    c.remove('b', 10); // nothing left to give back: no negative count
    expect(c.add('b', 10)).to.equal(1);
    // Window 11 opens: window 10 is still counted (requests stamped just before the turn).
    expect(c.add('a', 11)).to.equal(1);
    expect(c.add('a', 10)).to.equal(4);
    // Window 12 opens: window 10 is dropped whole; a late request for it starts from nothing.
    expect(c.add('a', 12)).to.equal(1);
    expect(c.add('a', 10)).to.equal(1);
    expect(c.add('a', 11)).to.equal(2);
  });
});

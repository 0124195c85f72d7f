// engine/store/memory/sharded-map.ts: a Map whose growth never rehashes everything at once.
import { expect } from 'chai';
import { ShardedMap } from '../../engine/store/memory/sharded-map.ts';

describe('sharded map', () => {
  it('behaves as a Map: set, get, has, delete, size', () => {
    const m = new ShardedMap<number>();
    const reference = new Map<string, number>();
    for (let i = 0; i < 20_000; i++) {
      const k = i % 3 === 0 ? `chatcmpl-${i}` : crypto.randomUUID();
      m.set(k, i);
      reference.set(k, i);
      if (i % 7 === 0) {
        expect(m.delete(k)).to.equal(true);
        reference.delete(k);
      }
    }
    m.set('chatcmpl-3', -1); // overwrite: size unchanged
    reference.set('chatcmpl-3', -1);
    expect(m.size).to.equal(reference.size);
    for (const [k, v] of reference) expect(m.get(k)).to.equal(v);
    expect(m.has('nope')).to.equal(false);
    expect(m.delete('nope')).to.equal(false);
  });

  it('spreads keys over its shards (no shard holds much more than its share)', () => {
    const m = new ShardedMap<number>();
    for (let i = 0; i < 64_000; i++) m.set(`task-${i}`, i);
    const sizes = (m as unknown as { shards: Map<string, number>[] }).shards.map((s) => s.size);
    expect(Math.max(...sizes)).to.be.below(1_000 * 1.3);
    expect(Math.min(...sizes)).to.be.above(1_000 * 0.7);
  });
});

// engine/store/memory/off-heap-map.ts: a string-keyed map kept off the JS heap.
import { expect } from 'chai';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { OffHeapMap } from '../../engine/store/memory/off-heap-map.ts';

describe('off-heap map', () => {
  it('behaves as a Map under sets, overwrites and deletes (checked against a Map at every step)', () => {
    const m = new OffHeapMap<{ n: number; note?: string }>();
    const reference = new Map<string, { n: number; note?: string }>();
    const keys: string[] = [];
    for (let i = 0; i < 60_000; i++) {
      // Similar keys, unicode, the empty string: what refs look like, and what they could be.
      const k = i % 5 === 0 ? `provider_c/chat_completions:${i.toString(16).padStart(32, '0')}` : i % 11 === 0 ? `réf 🦊 ${i}` : i === 7 ? '' : crypto.randomUUID();
      keys.push(k);
      const v = { n: i, ...(i % 3 ? {} : { note: `note ${i}` }) };
      m.set(k, v);
      reference.set(k, v);
      if (i % 7 === 0) {
        const victim = keys[(i * 31) % keys.length]!;
        expect(m.delete(victim)).to.equal(reference.delete(victim));
      }
      if (i % 13 === 0) {
        const again = keys[(i * 17) % keys.length]!;
        m.set(again, { n: -i - 1 });
        reference.set(again, { n: -i - 1 });
      }
      expect(m.size).to.equal(reference.size);
    }
    for (const k of keys) {
      expect(m.has(k)).to.equal(reference.has(k));
      expect(m.get(k)).to.deep.equal(reference.get(k));
    }
    expect(m.get('nope')).to.equal(undefined);
    expect(m.delete('nope')).to.equal(false);
  });

  it('deleted slots are reclaimed: a map that keeps deleting and adding stays usable and exact', () => {
    const m = new OffHeapMap<number>();
    for (let i = 0; i < 50_000; i++) {
      m.set(`k${i}`, i);
      if (i >= 10) expect(m.delete(`k${i - 10}`)).to.equal(true);
    }
    expect(m.size).to.equal(10);
    for (let i = 49_990; i < 50_000; i++) expect(m.get(`k${i}`)).to.equal(i);
    expect(m.has('k49989')).to.equal(false);
  });

  it('hands out copies: changing a value read does not change the map', () => {
    const m = new OffHeapMap<{ amount: number }>();
    m.set('a', { amount: 1 });
    m.get('a')!.amount = 99;
    expect(m.get('a')).to.deep.equal({ amount: 1 });
  });

  it('keeps no per-entry object on the JS heap', () => {
    // A full collection on demand, without starting node with --expose-gc.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const heap = () => {
      gc();
      return process.memoryUsage().heapUsed;
    };
    const m = new OffHeapMap<{ amount: number; final: boolean }>();
    const before = heap();
    for (let i = 0; i < 200_000; i++) m.set(`provider_c/chat_completions:${i.toString(16).padStart(32, '0')}`, { amount: i, final: true });
    const perEntry = (heap() - before) / 200_000;
    expect(m.size).to.equal(200_000);
    // A Map of the same keys and objects costs ~250 bytes per entry on the heap.
    expect(perEntry).to.be.below(8);
  });
});

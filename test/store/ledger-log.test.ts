// The memory wallet store keeps ledger entries off the heap (engine/store/memory/ledger-log.ts):
// what goes in comes back out, in order, across buffer boundaries and index growth.
import { expect } from 'chai';
import type { LedgerEntry } from '../../engine/billing/store.ts';
import { LedgerLog } from '../../engine/store/memory/ledger-log.ts';

const entry = (seq: number, note = `chat completion chatcmpl-${seq}`): LedgerEntry => ({
  id: `led_${seq.toString(36).padStart(20, '0')}`, seq, at: new Date(1_767_225_600_000 + seq).toISOString(), kind: seq % 2 ? 'hold' : 'settle', amount: seq * 7, ref: `ref-${seq}`, note,
});

describe('memory ledger log', () => {
  it('returns every entry as it went in, in order, across 1 MiB buffers and index growth', () => {
    const log = new LedgerLog();
    const n = 30_000; // ~4 MiB of JSON: several buffers; the index grows from 1024 slots
    for (let i = 1; i <= n; i++) log.push(entry(i, i % 1000 === 0 ? `« détaillé » 🦊 ${'x'.repeat(i % 3000)}` : undefined));
    expect(log.length).to.equal(n);
    const all = log.slice(0);
    expect(all).to.have.length(n);
    for (let i = 1; i <= n; i++) expect(all[i - 1]).to.deep.equal(entry(i, i % 1000 === 0 ? `« détaillé » 🦊 ${'x'.repeat(i % 3000)}` : undefined));
    expect(log.slice(n - 2, n + 5).map((e) => e.seq)).to.deep.equal([n - 1, n]);
    expect(log.slice(-3, 2).map((e) => e.seq)).to.deep.equal([1, 2]);
  });

  it('an entry larger than a buffer gets a buffer of its own', () => {
    const log = new LedgerLog();
    log.push(entry(1));
    log.push(entry(2, 'y'.repeat(3 << 20)));
    log.push(entry(3));
    expect(log.slice(0).map((e) => [e.seq, e.note.length])).to.deep.equal([[1, entry(1).note.length], [2, 3 << 20], [3, entry(3).note.length]]);
  });

  it('hands out fresh objects: changing one does not change the log', () => {
    const log = new LedgerLog();
    log.push(entry(1));
    log.slice(0)[0]!.amount = -1;
    expect(log.slice(0)[0]!.amount).to.equal(7);
  });
});

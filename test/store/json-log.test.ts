// The memory stores keep per-request records off the heap (engine/store/memory/json-log.ts):
// what goes in comes back out, in order, across buffer boundaries and index pages.
import { expect } from 'chai';
import type { LedgerEntry } from '../../engine/billing/store.ts';
import { JsonLog } from '../../engine/store/memory/json-log.ts';

const entry = (seq: number, note = `chat completion chatcmpl-${seq}`): LedgerEntry => ({
  id: `led_${seq.toString(36).padStart(20, '0')}`, seq, at: new Date(1_767_225_600_000 + seq).toISOString(), kind: seq % 2 ? 'hold' : 'settle', amount: seq * 7, ref: `ref-${seq}`, note,
});

describe('memory JSON log', () => {
  it('returns every entry as it went in, in order, across growing buffers and index pages', () => {
    const log = new JsonLog<LedgerEntry>();
    const n = 30_000; // ~4 MiB of JSON: buffers from 4 KiB up to 1 MiB; a first page grown to 4,096, then pages of 4,096
    for (let i = 1; i <= n; i++) log.push(entry(i, i % 1000 === 0 ? `« détaillé » 🦊 ${'x'.repeat(i % 3000)}` : undefined));
    expect(log.length).to.equal(n);
    const all = log.slice(0);
    expect(all).to.have.length(n);
    for (let i = 1; i <= n; i++) expect(all[i - 1]).to.deep.equal(entry(i, i % 1000 === 0 ? `« détaillé » 🦊 ${'x'.repeat(i % 3000)}` : undefined));
    expect(log.slice(n - 2, n + 5).map((e) => e.seq)).to.deep.equal([n - 1, n]);
    expect(log.slice(-3, 2).map((e) => e.seq)).to.deep.equal([1, 2]);
    for (const i of [0, 15, 16, 4_095, 4_096, 8_192, n - 1]) expect(log.get(i).seq).to.equal(i + 1);
    expect(log.push(entry(n + 1))).to.equal(n);
  });

  it('an entry larger than a buffer gets a buffer of its own', () => {
    const log = new JsonLog<LedgerEntry>();
    log.push(entry(1));
    log.push(entry(2, 'y'.repeat(3 << 20)));
    log.push(entry(3));
    expect(log.slice(0).map((e) => [e.seq, e.note.length])).to.deep.equal([[1, entry(1).note.length], [2, 3 << 20], [3, entry(3).note.length]]);
  });

  it('hands out fresh objects: changing one does not change the log', () => {
    const log = new JsonLog<LedgerEntry>();
    log.push(entry(1));
    log.slice(0)[0]!.amount = -1;
    expect(log.slice(0)[0]!.amount).to.equal(7);
  });
});

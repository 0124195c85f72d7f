// The memory wallet store's ledger lines (engine/store/memory/ledger-lines.ts): what is read back
// is what was written, by seq across days, drops and compaction.
import { expect } from 'chai';
import type { LedgerEntry } from '../../engine/billing/store.ts';
import { LedgerLines } from '../../engine/store/memory/ledger-lines.ts';

describe('memory store: ledger lines kept', () => {
  const line = (seq: number): LedgerEntry => ({
    id: `led_${String(seq).padStart(24, '0')}`,
    seq,
    at: new Date(Date.UTC(2026, 2, 1) + seq * 60_000).toISOString(), // a new UTC day every 1,440 lines
    kind: seq % 2 ? 'hold' : 'settle',
    amount: seq,
    ref: `ref "${seq}" \u2713\n`,
    note: seq % 3 ? '' : 'a note {with} "quotes"',
  });

  it('reads back each line (a copy), its kind and amount, a range, and where each UTC day starts', () => {
    const l = new LedgerLines();
    for (let seq = 1; seq <= 3000; seq++) l.push(line(seq));
    expect([l.firstSeq, l.lastSeq, l.length]).to.deep.equal([1, 3000, 3000]);
    for (const seq of [1, 2, 1440, 1441, 3000]) {
      expect(l.get(seq)).to.deep.equal(line(seq));
      expect([l.kindOf(seq), l.amountOf(seq)]).to.deep.equal([line(seq).kind, seq]);
    }
    expect(l.range(10, 12)).to.deep.equal([10, 11, 12].map(line));
    const copy = l.get(5);
    copy.amount = -1;
    expect(l.get(5).amount, 'a copy').to.equal(5);
    expect(l.nextDay(1)).to.equal(1440); // 2026-03-02T00:00 is line 1440
    expect(l.nextDay(1440)).to.equal(2880);
    expect(l.nextDay(2880)).to.equal(Infinity);
  });

  it('drops the oldest lines and compacts, the seqs and lines unchanged', () => {
    const l = new LedgerLines();
    let seq = 0;
    for (; seq < 200_000; ) l.push(line(++seq)); // the archive lagging behind a burst
    while (l.length > 15_000) l.dropOldest(5_000);
    for (let i = 0; i < 50_000; i++) {
      l.push(line(++seq));
      if (l.length >= 15_000) l.dropOldest(5_000);
    }
    expect([l.firstSeq, l.lastSeq]).to.deep.equal([seq - l.length + 1, seq]);
    for (let s = l.firstSeq; s <= l.lastSeq; s += 991) expect(l.get(s)).to.deep.equal(line(s));
    const lines = l.range(l.firstSeq, l.lastSeq);
    expect(lines.length).to.equal(l.length);
    expect(lines.at(-1)).to.deep.equal(line(seq));
  });
});

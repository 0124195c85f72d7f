// The memory wallet store's ledger lines as bytes (engine/store/memory/ledger-lines.ts): what is
// read back is what was written, and a burst's memory goes back once the archive has caught up.
import { expect } from 'chai';
import type { LedgerEntry } from '../../engine/billing/store.ts';
import { LedgerLines } from '../../engine/store/memory/ledger-lines.ts';

describe('memory store: ledger lines kept as bytes', () => {
  const line = (seq: number): LedgerEntry => ({
    id: `led_${String(seq).padStart(24, '0')}`,
    seq,
    at: new Date(Date.UTC(2026, 2, 1) + seq * 60_000).toISOString(), // a new UTC day every 1,440 lines
    kind: seq % 2 ? 'hold' : 'settle',
    amount: seq,
    ref: `ref "${seq}" \u2713\n`,
    note: seq % 3 ? '' : 'a note {with} "quotes"',
  });

  it('reads back each line, its kind and amount, and the NDJSON of a range, as JSON.stringify wrote them', () => {
    const l = new LedgerLines();
    for (let seq = 1; seq <= 3000; seq++) l.push(line(seq));
    expect([l.firstSeq, l.lastSeq, l.length]).to.deep.equal([1, 3000, 3000]);
    for (const seq of [1, 2, 1440, 1441, 3000]) {
      expect(l.get(seq)).to.deep.equal(line(seq));
      expect([l.kindOf(seq), l.amountOf(seq)]).to.deep.equal([line(seq).kind, seq]);
    }
    expect(l.ndjson(10, 12).toString()).to.equal([10, 11, 12].map((s) => `${JSON.stringify(line(s))}\n`).join(''));
    expect(l.nextDay(1)).to.equal(1440); // 2026-03-02T00:00 is line 1440
    expect(l.nextDay(1440)).to.equal(2880);
    expect(l.nextDay(2880)).to.equal(Infinity);
  });

  it('drops the oldest lines, compacts, and gives a burst\'s memory back once the archive caught up', () => {
    const l = new LedgerLines();
    let seq = 0;
    for (; seq < 200_000; ) l.push(line(++seq)); // the archive lagging behind a burst
    const burst = l.capacity;
    while (l.length > 15_000) l.dropOldest(5_000);
    for (let i = 0; i < 50_000; i++) {
      l.push(line(++seq));
      if (l.length >= 15_000) l.dropOldest(5_000);
    }
    expect(l.capacity).to.be.at.most(burst / 4);
    expect([l.firstSeq, l.lastSeq]).to.deep.equal([seq - l.length + 1, seq]);
    for (let s = l.firstSeq; s <= l.lastSeq; s += 991) expect(l.get(s)).to.deep.equal(line(s));
    const lines = l.ndjson(l.firstSeq, l.lastSeq).toString().split('\n').filter(Boolean);
    expect(lines.length).to.equal(l.length);
    expect(JSON.parse(lines.at(-1)!)).to.deep.equal(line(seq));
  });
});

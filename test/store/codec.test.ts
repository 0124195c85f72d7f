// The Redis adapters' "field lines" record codec (engine/store/redis/codec.ts): a line per
// top-level field, `name<TAB>JSON`; a patch's undefined field is a deletion line.
import { expect } from 'chai';
import { decodeRecord, encodePatch, encodeRecord } from '../../engine/store/redis/codec.ts';

describe('field-lines record codec', () => {
  it('round-trips a record JSON-exact and leaves undefined fields out', () => {
    const rec = { id: 't1', n: 9_007_199_254_740_991, nested: { a: [1, { b: null }], s: 'tab\there\nnewline «é» 🦊' }, empty: [], none: undefined, f: false };
    const s = encodeRecord(rec);
    expect(s.split('\n').map((l) => l.split('\t')[0])).to.deep.equal(['id', 'n', 'nested', 'empty', 'f']);
    expect(decodeRecord(s)).to.deep.equal({ id: 't1', n: 9_007_199_254_740_991, nested: rec.nested, empty: [], f: false });
    expect(encodeRecord({})).to.equal('');
  });

  it('encodes a patch: an undefined field is a deletion line', () => {
    expect(encodePatch({ status: 'completed', error: undefined, poll_n: 2 })).to.equal('status\t"completed"\nerror\t\npoll_n\t2');
  });

  it('refuses a field name it could not split back, every time it is met', () => {
    for (let i = 0; i < 2; i++) {
      expect(() => encodeRecord({ 'a\tb': 1 })).to.throw(/cannot be stored/);
      expect(() => encodePatch({ 'a\nb': 1 })).to.throw(/cannot be stored/);
      expect(() => encodeRecord({ '': 1 })).to.throw(/cannot be stored/);
    }
  });
});

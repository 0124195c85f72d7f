// The one error-code policy (engine/validation/error-policy.ts) and the request validator that
// applies it: keyword → violation → code, the enum refinement, overrides that need a reason,
// rules with `violation`/`each`, normalisers, and the primary-code order.
import { expect } from 'chai';
import { createAjv } from '../../engine/validation/ajv.ts';
import { CODE_PRIORITY, KEYWORD_VIOLATIONS, VIOLATION_CODES, overridesWithoutReason, primaryCode } from '../../engine/validation/error-policy.ts';
import { compileRouteValidator, type RequestChecks } from '../../engine/validation/request-validator.ts';
import { GatewayError } from '../../engine/errors/gateway-error.ts';

let seq = 0;
const ajv = createAjv({ useDefaults: true });
const validator = (checks: RequestChecks) => compileRouteValidator(ajv, `https://model-gateway.dev/test/policy-${++seq}.json`, checks);

async function failure(v: ReturnType<typeof validator>, body: unknown): Promise<GatewayError> {
  try {
    await v(body);
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error(`expected ${JSON.stringify(body)} to fail`);
}

describe('error policy', () => {
  it('names each service code of the spec exactly once per violation kind', () => {
    expect(VIOLATION_CODES).to.deep.equal({
      required: 2002, malformed: 2001, unsupported_parameter: 2004, conflict: 2004, out_of_range: 2003, unsupported_value: 2003,
      file_size: 2101, file_format: 2102, file_content: 2103,
    });
    expect(CODE_PRIORITY.slice(0, 7)).to.deep.equal([2002, 2001, 2004, 2003, 2101, 2102, 2103]);
  });

  it('maps JSON Schema keywords onto violations', () => {
    expect(KEYWORD_VIOLATIONS).to.include({ required: 'required', type: 'malformed', pattern: 'malformed', format: 'malformed', additionalProperties: 'unsupported_parameter', not: 'conflict', minimum: 'out_of_range', maxLength: 'out_of_range', maxItems: 'out_of_range' });
  });

  it('primary code: the first present in the order 2002, 2001, 2004, 2003, 21xx', () => {
    expect(primaryCode([2003, 2004])).to.equal(2004);
    expect(primaryCode([2103, 2003])).to.equal(2003);
    expect(primaryCode([2102, 2101])).to.equal(2101);
    expect(primaryCode([2004, 2002, 2001])).to.equal(2002);
  });

  const schema = {
    type: 'object',
    additionalProperties: false,
    required: ['prompt'],
    properties: {
      prompt: { type: 'string', maxLength: 5 },
      size: { type: 'string', pattern: '^[0-9]+\\*[0-9]+$', enum: ['1*1', '2*2'] },
      mode: { type: 'string', enum: ['a', 'b'] },
      duration: { type: 'integer', enum: [5, 10] },
      // Bare enums (no `type`), as OpenAI-style schemas write them: the listed values' types decide.
      tier: { enum: ['a', 'b', null] },
      level: { enum: [0, 1] },
      n: { type: 'integer', minimum: 1, maximum: 4, default: 4 },
      flag: { type: 'boolean' },
      other: { type: 'boolean' },
    },
    not: { required: ['flag', 'other'] },
  };
  const cases: Array<[string, unknown, number, string]> = [
    ['a missing required field', {}, 2002, '/prompt'],
    ['a wrong type', { prompt: 1 }, 2001, '/prompt'],
    ['a string outside a plain enum', { prompt: 'x', mode: 'c' }, 2001, '/mode'],
    ['a number outside its enum (well-formed, not offered)', { prompt: 'x', duration: 7 }, 2003, '/duration'],
    ['a string matching the pattern but outside the enum', { prompt: 'x', size: '3*3' }, 2003, '/size'],
    ['a string failing the pattern beside an enum', { prompt: 'x', size: '3x3' }, 2001, '/size'],
    ['a number where a bare enum lists strings (wrong type)', { prompt: 'x', tier: 1 }, 2001, '/tier'],
    ['a boolean where a bare enum lists strings and null', { prompt: 'x', tier: false }, 2001, '/tier'],
    ['a string outside a bare string enum', { prompt: 'x', tier: 'c' }, 2001, '/tier'],
    ['a number outside a bare numeric enum (well-formed, not offered)', { prompt: 'x', level: 2 }, 2003, '/level'],
    ['a string where a bare enum lists numbers (wrong type)', { prompt: 'x', level: '1' }, 2001, '/level'],
    ['an unknown field', { prompt: 'x', extra: 1 }, 2004, '/extra'],
    ['mutually exclusive fields (not)', { prompt: 'x', flag: true, other: true }, 2004, ''],
    ['a value over its maximum', { prompt: 'x', n: 5 }, 2003, '/n'],
    ['a string over its maximum length', { prompt: 'abcdef' }, 2003, '/prompt'],
  ];
  for (const [what, body, code, pointer] of cases) {
    it(`${what} → ${code}`, async () => {
      const err = await failure(validator({ schema }), body);
      expect(err.code).to.equal(code);
      expect(err.status).to.equal(400);
      expect(err.errors.map((e) => e.pointer)).to.include(pointer);
    });
  }

  it('a pattern failure beside an enum is reported once (by the pattern)', async () => {
    const err = await failure(validator({ schema }), { prompt: 'x', size: 'big' });
    expect(err.errors.filter((e) => e.pointer === '/size')).to.have.length(1);
  });

  it('every broken rule is listed with its own code; the answer carries the primary one', async () => {
    const err = await failure(validator({ schema }), { prompt: 'abcdef', mode: 'z', extra: true });
    expect(err.code).to.equal(2001);
    expect(err.errors.map((e) => [e.pointer, e.code])).to.have.deep.members([['/prompt', 2003], ['/mode', 2001], ['/extra', 2004]]);
    expect(err.detail).to.match(/and 2 more problems, see errors/);
  });

  it('x-error-code overrides the policy for one node, and needs an x-error-reason', async () => {
    const over = { type: 'object', properties: { d: { type: 'integer', anyOf: [{ const: -1 }, { minimum: 2 }], 'x-error-code': { anyOf: 2003 }, 'x-error-reason': 'out of range', 'x-error-detail': 'must be -1 or at least 2' } } };
    const err = await failure(validator({ schema: over }), { d: 0 });
    expect([err.code, err.detail]).to.deep.equal([2003, 'd must be -1 or at least 2']);
    const typed = await failure(validator({ schema: over }), { d: 'x' });
    expect(typed.code).to.equal(2001); // the override is per keyword: a wrong type stays 2001
    expect(typed.detail).to.match(/^d must be an integer/);
    const unexplained = { type: 'object', properties: { d: { type: 'integer', 'x-error-code': 2003 } } };
    expect(overridesWithoutReason(unexplained)).to.deep.equal(['/properties/d']);
    expect(() => validator({ schema: unexplained })).to.throw(/x-error-code without x-error-reason at \/properties\/d/);
  });

  it('rules name a violation (the policy gives the code) or an explicit code; each repeats per item with {i}', async () => {
    const v = validator({
      schema: { type: 'object', properties: { total: { type: 'integer' }, parts: { type: 'array', items: { type: 'integer' } }, a: { type: 'boolean' }, b: { type: 'boolean' } } },
      rules: [
        { when: 'a and b', violation: 'conflict', pointer: '/a', message: 'a and b exclude each other' },
        { when: '$not($exists(total))', violation: 'required', pointer: '/total', message: 'total is required' },
        { each: 'parts', when: '$item > total', violation: 'out_of_range', pointer: '/parts/{i}', message: 'parts.{i} is over total' },
        { when: '$sum(parts) != total', code: 2000, pointer: '/parts', message: 'parts must add up to total' },
      ],
    });
    const err = await failure(v, { total: 5, parts: [1, 9, 2, 7], a: true, b: true });
    expect(err.code).to.equal(2004);
    expect(err.errors.map((e) => [e.pointer, e.code, e.detail])).to.deep.equal([
      ['/a', 2004, 'a and b exclude each other'],
      ['/parts/1', 2003, 'parts.1 is over total'],
      ['/parts/3', 2003, 'parts.3 is over total'],
      ['/parts', 2000, 'parts must add up to total'],
    ]);
    expect((await failure(v, { parts: [] })).code).to.equal(2002);
    expect(await v({ total: 3, parts: [1, 2] })).to.deep.equal({ total: 3, parts: [1, 2] });
  });

  it('a rule with neither violation nor code does not compile', () => {
    expect(() => validator({ schema: { type: 'object' }, rules: [{ when: 'true', message: 'x' }] })).to.throw(/neither a violation nor a code/);
  });

  it('normalisers run before the schema: lowercase makes an enum case-insensitive, and the stored value is normalised', async () => {
    const v = validator({ schema: { type: 'object', properties: { r: { type: 'string', enum: ['720p'] }, list: { type: 'array', items: { enum: ['a'] } } } }, normalise: { '/r': 'lowercase', '/list/*': 'trim' } });
    expect(await v({ r: '720P', list: [' a ', 'a'] })).to.deep.equal({ r: '720p', list: ['a', 'a'] });
    expect((await failure(v, { r: 720 })).code).to.equal(2001); // a non-string is left to the schema
  });

  it('defaults are filled in', async () => {
    expect(await validator({ schema })({ prompt: 'x' })).to.deep.equal({ prompt: 'x', n: 4 });
  });

  it('a body that is not an object → 2001', async () => {
    for (const body of [null, [], 'x', 3]) expect((await failure(validator({ schema }), body)).code).to.equal(2001);
  });
});

import { expect } from 'chai';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse } from 'yaml';
import pricingSchema from '../../schemas/pricing.schema.json' with { type: 'json' };
import { compilePricing, PricingConfigError, type PricePlan } from '../../engine/descriptors/pricing.ts';
import { GatewayError } from '../../engine/errors/gateway-error.ts';

// The spec's real prices, written as descriptors would write them.
const VIDEO_MODEL_A = parse(`
unit: second
unit_price:
  by: "$lowercase(resolution ?? '1080p')"
  table: { "480p": "0.050", "720p": "0.100", "1080p": "0.200" }
# billed seconds = reference-video seconds (at most 15 in total) + output seconds (-1 = model's choice,
# at most 30); input + output is at most 30 s, so the hold is capped at 30 s.
quantity: >-
  $min([
    ($type(reference_videos) = 'array' and $count(reference_videos) > 0 ? 15 : 0)
    + ((duration ?? 5) = -1 ? 30 : (duration ?? 5)),
    30])
settle_quantity: "$ceil(($upstream.usage.input_video_seconds ?? 0) + $upstream.usage.output_video_seconds)"
`);

const IMAGE_TOOL_IMAGE = parse(`
unit: image
unit_price:
  by: "($contains(prompt, /--draft\\\\b/) ? 'draft_' : '') & ($contains(prompt, /--turbo\\\\b/) ? 'turbo' : 'fast')"
  table: { fast: "0.085", turbo: "0.17", draft_fast: "0.0425", draft_turbo: "0.085" }
quantity: 4
settle_quantity: "$count($result.images)"
`);

const IMAGE_TOOL_VIDEO = parse(`
unit: task
unit_price:
  by: "(video_type = 1 ? '720p' : '480p') & '_' & ($contains(prompt, /--turbo\\\\b/) ? 'turbo' : 'fast')"
  table: { 480p_fast: "0.51", 480p_turbo: "1.02", 720p_fast: "1.632", 720p_turbo: "3.264" }
`);

const MODEL_D = parse(`
unit: image
unit_price: "0.04"
quantity: "n ?? 4"
settle_quantity: "$count($result.images)"
estimated: true
note: the spec gives no unit price for model D
`);

async function expect4005(p: Promise<unknown>, match: RegExp): Promise<void> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, 'expected a 4005').to.be.instanceOf(GatewayError);
  expect((err as GatewayError).code).to.equal(4005);
  expect((err as GatewayError).status).to.equal(500);
  expect((err as GatewayError).detail).to.match(match);
}

describe('descriptors/pricing', () => {
  let modelA: PricePlan, image: PricePlan, imageVideo: PricePlan, modelD: PricePlan;
  before(() => {
    modelA = compilePricing(VIDEO_MODEL_A, { label: 'model A' });
    image = compilePricing(IMAGE_TOOL_IMAGE);
    imageVideo = compilePricing(IMAGE_TOOL_VIDEO);
    modelD = compilePricing(MODEL_D);
  });

  describe('holds at the spec prices (credits_per_usd 100)', () => {
    const cases: [string, () => PricePlan, Record<string, unknown>, number][] = [
      ['model A default 1080p x 5 s', () => modelA, { prompt: 'a cat' }, 100_000],
      ['model A 480p x 10 s', () => modelA, { prompt: 'x', resolution: '480p', duration: 10 }, 50_000],
      ['model A 720P (case-insensitive) x 2 s', () => modelA, { prompt: 'x', resolution: '720P', duration: 2 }, 20_000],
      ['model A 1080p x 30 s', () => modelA, { prompt: 'x', duration: 30 }, 600_000],
      ['model A duration -1 holds the max 30 s', () => modelA, { prompt: 'x', resolution: '720p', duration: -1 }, 300_000],
      ['model A reference video + 10 s holds 15 + 10 s', () => modelA, { resolution: '480p', duration: 10, reference_videos: ['https://v/1.mp4'] }, 125_000],
      ['model A reference video + 20 s is capped at 30 s', () => modelA, { resolution: '480p', duration: 20, reference_videos: ['https://v/1.mp4'] }, 150_000],
      ['model A reference_videos null counts as none', () => modelA, { resolution: '480p', duration: 4, reference_videos: null }, 20_000],
      ['image tool fast x 4', () => image, { prompt: 'https://i/a.png a cat' }, 34_000],
      ['image tool turbo x 4', () => image, { prompt: 'a cat --turbo' }, 68_000],
      ['image tool draft fast x 4', () => image, { prompt: 'a cat --draft' }, 17_000],
      ['image tool draft turbo x 4', () => image, { prompt: 'a cat --draft --turbo' }, 34_000],
      ['image tool --turbocharged is not a flag', () => image, { prompt: 'a cat --turbocharged' }, 34_000],
      ['image-tool video 480p fast', () => imageVideo, { prompt: 'https://i/a.png go', video_type: 0 }, 51_000],
      ['image-tool video 480p turbo', () => imageVideo, { prompt: 'https://i/a.png go --turbo', video_type: 0 }, 102_000],
      ['image-tool video 720p fast', () => imageVideo, { prompt: 'https://i/a.png go', video_type: 1 }, 163_200],
      ['image-tool video 720p turbo', () => imageVideo, { prompt: 'https://i/a.png go --turbo', video_type: 1 }, 326_400],
      ['model D n = 2', () => modelD, { prompt: 'x', n: 2 }, 8_000],
      ['model D default n = 4', () => modelD, { prompt: 'x' }, 16_000],
    ];
    for (const [name, plan, request, milli] of cases) {
      it(`${name} -> ${milli / 1000} credits`, async () => {
        expect(await plan().hold(request)).to.equal(milli);
      });
    }
  });

  describe('settlement', () => {
    it('bills model A by the seconds the upstream reports (reference + output)', async () => {
      const req = { resolution: '720p', duration: 10, reference_videos: ['https://v/1.mp4'] };
      const upstream = { usage: { input_video_seconds: 6, output_video_seconds: 10 } };
      expect(await modelA.settle(req, {}, upstream)).to.equal(160_000); // 16 s x 0.100
      const q = await modelA.quoteSettle(req, {}, upstream);
      expect(q).to.deep.equal({ milli: 160_000, quantity: 16, unitPriceUsd: '0.100', tableKey: '720p' });
    });

    it('bills the image tool per image actually returned, at the flag-selected price', async () => {
      expect(await image.settle({ prompt: 'x' }, { images: ['a', 'b', 'c', 'd'] })).to.equal(34_000);
      expect(await image.settle({ prompt: 'x' }, { images: ['a', 'b'] })).to.equal(17_000);
      expect(await image.settle({ prompt: 'x --draft' }, { images: ['a'] })).to.equal(4_250);
      expect(await image.settle({ prompt: 'x' }, {})).to.equal(0);
    });

    it('settles per task at the hold when there is no settle_quantity', async () => {
      const req = { prompt: 'https://i/a.png go --turbo', video_type: 1 };
      expect(await imageVideo.settle(req, { videos: ['v'] })).to.equal(await imageVideo.hold(req));
    });

    it('never settles more than the hold', async () => {
      // upstream claims 40 s of a 5 s request: clamp to the 5 s hold
      const req = { resolution: '1080p', duration: 5 };
      expect(await modelA.settle(req, {}, { usage: { output_video_seconds: 40 } })).to.equal(100_000);
      expect(await image.settle({ prompt: 'x' }, { images: ['1', '2', '3', '4', '5', '6'] })).to.equal(34_000);
      expect(await modelD.settle({ n: 1 }, { images: ['1', '2'] })).to.equal(4_000);
    });
  });

  it('describes the plan', () => {
    expect(image.unit).to.equal('image');
    expect(image.summary).to.equal('fast 0.085, turbo 0.17, draft_fast 0.0425, draft_turbo 0.085 USD per image');
    expect(image.estimated).to.equal(false);
    expect(modelD.summary).to.equal('0.04 USD per image (estimated)');
    expect(modelD.estimated).to.equal(true);
    expect(modelD.note).to.match(/no unit price/);
    expect(Object.isFrozen(modelD)).to.equal(true);
  });

  it('uses credits_per_usd from config', async () => {
    const plan = compilePricing({ unit: 'image', unit_price: '0.085', quantity: 3 }, { creditsPerUsd: 1000 });
    expect(await plan.hold({})).to.equal(255_000);
  });

  describe('evaluation errors are 4005 configuration errors', () => {
    it('a non-integer quantity', async () => {
      const plan = compilePricing({ unit: 'second', unit_price: '0.1', quantity: 'duration' });
      await expect4005(plan.hold({ duration: 2.5 }), /quantity `duration` returned 2\.5, not a non-negative integer/);
    });
    it('a negative quantity', async () => {
      const plan = compilePricing({ unit: 'second', unit_price: '0.1', quantity: 'duration' });
      await expect4005(plan.hold({ duration: -1 }), /returned -1/);
    });
    it('a missing or non-numeric quantity', async () => {
      const plan = compilePricing({ unit: 'image', unit_price: '0.1', quantity: 'n', settle_quantity: '$result.count' });
      await expect4005(plan.hold({}), /returned nothing/);
      await expect4005(plan.hold({ n: '3' }), /returned the string "3"/);
      await expect4005(plan.settle({ n: 1 }, { count: true }), /settle_quantity `\$result.count` returned true/);
    });
    it('a table key that is not in the table', async () => {
      await expect4005(modelA.hold({ resolution: '4k', duration: 5 }), /"4k", which is not in the price table/);
    });
    it('an expression that fails at run time', async () => {
      const plan = compilePricing({ unit: 'task', unit_price: '0.1', quantity: '$number(x)' });
      await expect4005(plan.hold({ x: 'abc' }), /expression `\$number\(x\)` failed/);
    });
  });

  describe('compile-time errors name the offending property', () => {
    const cases: [string, unknown, string, RegExp][] = [
      ['a float unit price (unquoted in YAML)', { unit: 'image', unit_price: 0.085 }, '/unit_price', /quoted USD decimal/],
      ['a malformed price', { unit: 'image', unit_price: '0,085' }, '/unit_price', /not a non-negative USD decimal/],
      ['a negative price', { unit: 'image', unit_price: '-1' }, '/unit_price', /non-negative/],
      ['a bad table price', { unit: 'x', unit_price: { by: 'a', table: { 'a/b': 1 } } }, '/unit_price/table/a~1b', /quoted decimal/],
      ['an empty table', { unit: 'x', unit_price: { by: 'a', table: {} } }, '/unit_price/table', /map keys/],
      ['an expression that does not parse', { unit: 'x', unit_price: '1', quantity: 'n +' }, '/quantity', /does not parse/],
      ['a bad by expression', { unit: 'x', unit_price: { by: '(', table: { a: '1' } } }, '/unit_price/by', /does not parse/],
      ['a fractional constant quantity', { unit: 'x', unit_price: '1', quantity: 1.5 }, '/quantity', /non-negative integer/],
      ['an unknown property', { unit: 'x', unit_price: '1', quanity: 'n' }, '/quanity', /unknown/],
      ['a missing unit', { unit_price: '1' }, '/unit', /label/],
    ];
    for (const [name, block, pointer, match] of cases) {
      it(name, () => {
        let err: unknown;
        try {
          compilePricing(block);
        } catch (e) {
          err = e;
        }
        expect(err).to.be.instanceOf(PricingConfigError);
        expect((err as PricingConfigError).pointer).to.equal(pointer);
        expect((err as Error).message).to.match(match);
      });
    }
  });

  describe('pricing.schema.json', () => {
    for (const [name, ajv] of [
      ['draft-07 Ajv', new Ajv({ allErrors: true })],
      ['2020-12 Ajv', new Ajv2020({ allErrors: true })],
    ] as const) {
      it(`accepts the shipped blocks and rejects bad ones when $ref'd (${name})`, () => {
        ajv.addSchema(pricingSchema);
        const validate = ajv.compile({ type: 'object', properties: { pricing: { $ref: 'https://model-gateway.dev/schemas/pricing.schema.json' } } });
        for (const block of [VIDEO_MODEL_A, IMAGE_TOOL_IMAGE, IMAGE_TOOL_VIDEO, MODEL_D]) {
          expect(validate({ pricing: block }), JSON.stringify(validate.errors)).to.equal(true);
        }
        for (const bad of [
          { unit: 'image', unit_price: 0.085 },
          { unit: 'image', unit_price: '1e3' },
          { unit: 'image' },
          { unit: 'image', unit_price: '1', quantity: -1 },
          { unit: 'image', unit_price: '1', extra: true },
          { unit: 'image', unit_price: { by: 'x', table: {} } },
          { unit: 'Image', unit_price: '1' },
        ]) {
          expect(validate({ pricing: bad }), JSON.stringify(bad)).to.equal(false);
        }
      });
    }
  });
});

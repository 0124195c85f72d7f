// Text-to-video model F (provider_f): every constraint of the spec's field table and limits,
// the prompt rules by multi_shot / shot_type, shots, elements and frames.
import type { Gateway } from '../../engine/gateway.ts';
import { b64, bad, dataUri, enumValues, intRange, malformedBodies, maxLength, ok, runTable, unknownFields, vendorGateway, wrongTypes, type Case } from './support.ts';

const PATH = '/vendors/provider_f/v1/model_f/text-to-video/generation';
const P = { prompt: 'a samurai walks through falling snow' };
const IMG = 'https://cdn.example.com/hero.png';
const shots = (...d: number[]) => d.map((duration, i) => ({ prompt: `shot ${i + 1}`, duration }));
const custom = (multi_prompt: unknown, duration = 5, extra: Record<string, unknown> = {}) => ({ multi_shot: true, shot_type: 'customize', duration, multi_prompt, ...extra });
const el = (n: number) => Array.from({ length: n }, () => ({ frontal_image: IMG }));

const cases: Case[] = [
  ok('prompt only (every default applies)', P),
  // --- prompt rules by multi_shot and shot_type
  bad('no prompt and multi_shot absent (false)', {}, 2002, '/prompt'),
  bad('no prompt and multi_shot false', { multi_shot: false }, 2002, '/prompt'),
  bad('multi_shot true without shot_type', { ...P, multi_shot: true }, 2002, '/shot_type'),
  bad('shot_type intelligence without prompt', { multi_shot: true, shot_type: 'intelligence' }, 2002, '/prompt'),
  ok('shot_type intelligence with prompt', { ...P, multi_shot: true, shot_type: 'intelligence' }),
  bad('shot_type customize without multi_prompt', { multi_shot: true, shot_type: 'customize' }, 2002, '/multi_prompt'),
  ok('shot_type customize with multi_prompt and no prompt', custom(shots(2, 3))),
  ok('shot_type customize with a prompt too (the prompt is ignored)', custom(shots(5), 5, P)),
  bad('shot_type given while multi_shot is false', { ...P, shot_type: 'intelligence' }, 2004, '/shot_type'),
  bad('multi_prompt given while multi_shot is false', { ...P, multi_prompt: shots(5) }, 2004, '/multi_prompt'),
  bad('multi_prompt given with shot_type intelligence', { ...P, multi_shot: true, shot_type: 'intelligence', multi_prompt: shots(5) }, 2004, '/multi_prompt'),
  bad('shot_type customize given while multi_shot is false', { ...P, shot_type: 'customize', multi_prompt: shots(5) }, 2004, '/shot_type'),
  ...enumValues({ ...P, multi_shot: true }, 'shot_type', ['intelligence']),
  bad('shot_type unknown value', { ...P, multi_shot: true, shot_type: 'auto' }, 2001, '/shot_type'),
  ...wrongTypes(P, 'multi_shot', ['true', 1, null]),
  ...wrongTypes({ ...P, multi_shot: true }, 'shot_type', [1, null]),
  // --- multi_prompt: 1..6 shots, prompt <= 512, 1 <= duration <= total, sum = total
  ok('multi_prompt of 1 shot lasting the whole duration', custom(shots(5))),
  ok('multi_prompt of 6 shots', custom(shots(1, 1, 1, 1, 1, 1), 6)),
  bad('multi_prompt of 7 shots', custom(shots(1, 1, 1, 1, 1, 1, 1), 7), 2003, '/multi_prompt'),
  bad('multi_prompt empty', custom([]), 2003, '/multi_prompt'),
  ok('a shot prompt of 512 characters', custom([{ prompt: 'x'.repeat(512), duration: 5 }])),
  bad('a shot prompt of 513 characters', custom([{ prompt: 'x'.repeat(513), duration: 5 }]), 2003, '/multi_prompt/0/prompt'),
  bad('a shot prompt empty', custom([{ prompt: '', duration: 5 }]), 2003, '/multi_prompt/0/prompt'),
  ok('a shot duration of 1 (the minimum)', custom(shots(1, 4))),
  bad('a shot duration of 0', custom(shots(0, 5)), 2003, '/multi_prompt/0/duration'),
  ok('a shot duration equal to the total', custom(shots(15), 15)),
  bad('a shot duration over the total', custom(shots(6, 1), 5), 2003, '/multi_prompt/0/duration'),
  bad('the second shot over the total', custom(shots(1, 9), 5), 2003, '/multi_prompt/1/duration'),
  bad('shot durations summing under the total', custom(shots(2, 2), 5), 2003, '/multi_prompt'),
  bad('shot durations summing over the total', custom(shots(3, 3), 5), 2003, '/multi_prompt'),
  bad('shot durations against the default total of 5', { multi_shot: true, shot_type: 'customize', multi_prompt: shots(4, 4) }, 2003, '/multi_prompt'),
  bad('a shot without prompt', custom([{ duration: 5 }]), 2002, '/multi_prompt/0/prompt'),
  bad('a shot without duration', custom([{ prompt: 'x' }]), 2002, '/multi_prompt/0/duration'),
  bad('a shot with an unknown field', custom([{ prompt: 'x', duration: 5, camera: 'pan' }]), 2004, '/multi_prompt/0/camera'),
  bad('a shot duration of wrong type', custom([{ prompt: 'x', duration: '5' }]), 2001, '/multi_prompt/0/duration'),
  bad('a shot that is not an object', custom(['x']), 2001, '/multi_prompt/0'),
  ...wrongTypes({ multi_shot: true, shot_type: 'customize' }, 'multi_prompt', ['shot', { prompt: 'x', duration: 5 }]),
  // --- sound, mode, aspect_ratio, duration
  ...enumValues(P, 'sound', ['on', 'off']),
  bad('sound ON (case-sensitive)', { ...P, sound: 'ON' }, 2001, '/sound'),
  ...wrongTypes(P, 'sound', [true, 1]),
  ...enumValues(P, 'mode', ['std', 'pro']),
  bad('mode ultra', { ...P, mode: 'ultra' }, 2001, '/mode'),
  ...wrongTypes(P, 'mode', [1]),
  ...enumValues(P, 'aspect_ratio', ['16:9', '9:16', '1:1']),
  bad('aspect_ratio 4:3 (well-formed, not offered)', { ...P, aspect_ratio: '4:3' }, 2003, '/aspect_ratio'),
  bad('aspect_ratio wide (malformed)', { ...P, aspect_ratio: 'wide' }, 2001, '/aspect_ratio'),
  ...wrongTypes(P, 'aspect_ratio', [1.77]),
  ...intRange(P, 'duration', 3, 15),
  ...wrongTypes(P, 'duration', ['5', 5.5, null]),
  // --- elements: 1..3, referenced as <<<element_N>>>
  ok('one element referenced as <<<element_1>>>', { prompt: '<<<element_1>>> bows', elements: el(1) }),
  ok('three elements, all referenced', { prompt: '<<<element_1>>>, <<<element_2>>> and <<<element_3>>> meet', elements: el(3) }),
  ok('elements defined but not referenced', { ...P, elements: el(2) }),
  bad('four elements', { ...P, elements: el(4) }, 2003, '/elements'),
  bad('elements empty', { ...P, elements: [] }, 2003, '/elements'),
  bad('<<<element_2>>> with one element', { prompt: '<<<element_2>>> bows', elements: el(1) }, 2003, '/prompt'),
  bad('<<<element_1>>> without elements', { prompt: '<<<element_1>>> bows' }, 2003, '/prompt'),
  bad('<<<element_0>>> (elements count from 1)', { prompt: '<<<element_0>>> bows', elements: el(1) }, 2003, '/prompt'),
  ok('a shot referencing an element', custom([{ prompt: 'a door opens', duration: 2 }, { prompt: '<<<element_1>>> enters', duration: 3 }], 5, { elements: el(1) })),
  bad('a shot referencing a missing element', custom([{ prompt: 'a door opens', duration: 2 }, { prompt: '<<<element_2>>> enters', duration: 3 }], 5, { elements: el(1) }), 2003, '/multi_prompt/1/prompt'),
  bad('an element without frontal_image', { ...P, elements: [{ reference_images: [IMG] }] }, 2002, '/elements/0/frontal_image'),
  bad('an element with an unknown field', { ...P, elements: [{ frontal_image: IMG, name: 'hero' }] }, 2004, '/elements/0/name'),
  ok('an element with 3 reference images', { ...P, elements: [{ frontal_image: IMG, reference_images: [IMG, IMG, IMG] }] }),
  bad('an element with 4 reference images', { ...P, elements: [{ frontal_image: IMG, reference_images: [IMG, IMG, IMG, IMG] }] }, 2003, '/elements/0/reference_images'),
  ok('element images as Base64 and data URI', { ...P, elements: [{ frontal_image: b64('png'), reference_images: [dataUri('jpeg')] }] }),
  bad('an element image that does not decode', { ...P, elements: [{ frontal_image: IMG, reference_images: [IMG, '!!!'] }] }, 2103, '/elements/0/reference_images/1'),
  bad('an element frontal image as WEBP (F takes JPEG and PNG)', { ...P, elements: [el(1)[0], { frontal_image: b64('webp') }] }, 2102, '/elements/1/frontal_image'),
  ...wrongTypes(P, 'elements', [IMG, { frontal_image: IMG }]),
  // --- first/last frame fields
  ok('first_frame as URL', { ...P, first_frame: IMG }),
  ok('first_frame as Base64 JPEG and last_frame as a PNG data URI', { ...P, first_frame: b64('jpeg'), last_frame: dataUri('png') }),
  ok('first_frame of exactly 10 MB', { ...P, first_frame: b64('jpeg', 10 * 1024 * 1024) }),
  bad('first_frame of 10 MB + 1 byte', { ...P, first_frame: b64('jpeg', 10 * 1024 * 1024 + 1) }, 2101, '/first_frame'),
  bad('last_frame as BMP (F takes JPEG and PNG)', { ...P, last_frame: b64('bmp') }, 2102, '/last_frame'),
  bad('last_frame that does not decode', { ...P, last_frame: 'abc$' }, 2103, '/last_frame'),
  bad('first_frame empty', { ...P, first_frame: '' }, 2001, '/first_frame'),
  ...wrongTypes(P, 'first_frame', [1, null]),
  ...wrongTypes(P, 'last_frame', [[IMG]]),
  // --- prompt lengths
  ...maxLength({}, 'prompt', 2500),
  bad('prompt empty', { prompt: '' }, 2003, '/prompt'),
  ...maxLength(P, 'negative_prompt', 2500),
  ...wrongTypes({}, 'prompt', [1, ['x']]),
  ...wrongTypes(P, 'negative_prompt', [null]),
  ...unknownFields(P, ['model_name', 'image', 'image_tail', 'cfg_scale']),
  ...malformedBodies(),
];

describe('model F: validation table', function () {
  this.timeout(60_000);
  let ctx: { gw: Gateway; key: string };
  before(async () => {
    ctx = await vendorGateway();
  });
  after(async () => {
    await ctx.gw.close();
  });
  runTable(`POST ${PATH}`, () => ctx, PATH, cases);
});

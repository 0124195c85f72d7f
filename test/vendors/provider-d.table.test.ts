// Text-to-image model D and image-to-video model G (provider_d): every constraint of the spec's
// field table and limits, one case per row, through a real gateway (RFC 9457 errors, 202 creates).
import { b64, bad, dataUri, enumValues, intRange, malformedBodies, maxLength, ok, unknownFields, validationTables, wrongTypes, type Case } from './support.ts';

const D = '/vendors/provider_d/v1/model_d/generation';
const G = '/vendors/provider_d/v1/model_g/generation';
const P = { prompt: 'a red fox in fresh snow' };
const F = { first_frame: 'https://cdn.example.com/cat.png' };
const size = (s: string) => ({ ...P, size: s });

const modelD: Case[] = [
  ok('prompt only (every default applies)', P),
  ok('every field given', { ...P, negative_prompt: 'blurry', size: '1024*1024', n: 2, prompt_extend: true, seed: 7, safety_filter: false }),
  // required
  bad('prompt missing', {}, 2002, '/prompt'),
  bad('prompt missing, other fields given', { negative_prompt: 'blurry', n: 2 }, 2002, '/prompt'),
  // lengths
  ...maxLength({}, 'prompt', 2000),
  bad('prompt empty', { prompt: '' }, 2003, '/prompt'),
  ...maxLength(P, 'negative_prompt', 500),
  ok('negative_prompt empty', { ...P, negative_prompt: '' }),
  // size: format (2001) and range (2003)
  ok('size 1280*1280 (the default, explicit)', size('1280*1280')),
  ok('size 768*768: the smallest pixel count', size('768*768')),
  bad('size 767*769: one pixel under 768*768', size('767*769'), 2003, '/size'),
  bad('size 767*768', size('767*768'), 2003, '/size'),
  ok('size 1440*1440: the largest pixel count', size('1440*1440')),
  ok('size 1439*1441: one pixel under 1440*1440', size('1439*1441')),
  bad('size 1441*1440: over 1440*1440', size('1441*1440'), 2003, '/size'),
  bad('size 1440*1441: over 1440*1440', size('1440*1441'), 2003, '/size'),
  ok('size 512*2048: exactly 1:4', size('512*2048')),
  bad('size 511*2048: narrower than 1:4', size('511*2048'), 2003, '/size'),
  ok('size 2048*512: exactly 4:1', size('2048*512')),
  bad('size 2049*512: wider than 4:1', size('2049*512'), 2003, '/size'),
  ok('size 384*1536: the smallest pixel count at exactly 1:4', size('384*1536')),
  bad('size 383*1536: under both the pixel count and 1:4', size('383*1536'), 2003, '/size'),
  ok('size 1024*1536 (portrait)', size('1024*1536')),
  ok('size 1536*1024 (landscape)', size('1536*1024')),
  bad('size 100*100: far too small', size('100*100'), 2003, '/size'),
  bad('size 4096*4096: far too large', size('4096*4096'), 2003, '/size'),
  bad('size 1280x1280 (x instead of *)', size('1280x1280'), 2001, '/size'),
  bad('size 1280 * 1280 (spaces)', size('1280 * 1280'), 2001, '/size'),
  bad('size 1280* (no height)', size('1280*'), 2001, '/size'),
  bad('size *1280 (no width)', size('*1280'), 2001, '/size'),
  bad('size 0*1280 (zero width)', size('0*1280'), 2001, '/size'),
  bad('size -768*768 (negative)', size('-768*768'), 2001, '/size'),
  bad('size 1280*1280*1 (three numbers)', size('1280*1280*1'), 2001, '/size'),
  bad('size 1280.5*1280 (decimal)', size('1280.5*1280'), 2001, '/size'),
  bad('size empty string', size(''), 2001, '/size'),
  ...wrongTypes(P, 'size', [1280, ['1280', '1280'], { width: 1280, height: 1280 }, null]),
  // n 1..4
  ...intRange(P, 'n', 1, 4),
  ...wrongTypes(P, 'n', ['4', 2.5, true, null]),
  // seed 0..2147483647
  ...intRange(P, 'seed', 0, 2147483647),
  ok('seed at its maximum with n = 4 (the series wraps)', { ...P, seed: 2147483647, n: 4 }),
  ...wrongTypes(P, 'seed', ['42', 4.2, false, null]),
  // booleans
  ok('prompt_extend true', { ...P, prompt_extend: true }),
  ok('safety_filter false', { ...P, safety_filter: false }),
  ...wrongTypes(P, 'prompt_extend', ['false', 1, null]),
  ...wrongTypes(P, 'safety_filter', ['true', 0, null]),
  ...wrongTypes({}, 'prompt', [1, true, null, ['x']]),
  ...wrongTypes(P, 'negative_prompt', [1, null, ['x']]),
  // unknown parameters
  ...unknownFields(P, ['model', 'steps', 'width', 'image']),
  // several problems
  bad('missing prompt and a bad size: 2002 first', { size: 'big' }, 2002, '/size'),
  bad('bad n and bad seed type: 2001 first', { ...P, n: 9, seed: 'x' }, 2001, '/n'),
  bad('size breaking both the pixel rule and the ratio rule', size('64*4096'), 2003, '/size'),
  ...malformedBodies(),
];

const modelG: Case[] = [
  ok('first_frame URL only (every default applies)', F),
  ok('every field given', { ...F, prompt: 'the cat yawns', negative_prompt: 'blur', resolution: '720p', duration: 10, prompt_extend: false, audio: false, seed: 1, safety_filter: false }),
  bad('first_frame missing', { prompt: 'x' }, 2002, '/first_frame'),
  bad('empty body', {}, 2002, '/first_frame'),
  ok('first_frame as bare Base64 PNG', { first_frame: b64('png') }),
  ok('first_frame as a JPEG data URI', { first_frame: dataUri('jpeg') }),
  ok('first_frame as bare Base64 WEBP', { first_frame: b64('webp') }),
  ok('first_frame of exactly 10 MB', { first_frame: b64('png', 10 * 1024 * 1024) }),
  bad('first_frame of 10 MB + 1 byte', { first_frame: b64('png', 10 * 1024 * 1024 + 1) }, 2101, '/first_frame'),
  bad('first_frame Base64 that does not decode', { first_frame: 'not/base64!' }, 2103, '/first_frame'),
  bad('first_frame bytes that are no image', { first_frame: b64('noise') }, 2103, '/first_frame'),
  bad('first_frame as GIF', { first_frame: dataUri('gif') }, 2102, '/first_frame'),
  bad('first_frame as an empty string', { first_frame: '' }, 2001, '/first_frame'),
  ...wrongTypes({}, 'first_frame', [1, null, ['https://cdn.example.com/cat.png']]),
  ...maxLength(F, 'prompt', 2000),
  ...maxLength(F, 'negative_prompt', 500),
  ...enumValues(F, 'resolution', ['480p', '720p', '1080p']),
  ok('resolution 720P (case-insensitive)', { ...F, resolution: '720P' }),
  bad('resolution 2160p (unsupported)', { ...F, resolution: '2160p' }, 2003, '/resolution'),
  bad('resolution HD (malformed)', { ...F, resolution: 'HD' }, 2001, '/resolution'),
  ...enumValues(F, 'duration', [5, 10, 15]),
  bad('duration 4 (not offered)', { ...F, duration: 4 }, 2003, '/duration'),
  bad('duration 16 (not offered)', { ...F, duration: 16 }, 2003, '/duration'),
  ...wrongTypes(F, 'duration', ['5', 5.5]),
  ok('audio_url .mp3', { ...F, audio_url: 'https://cdn.example.com/a.mp3' }),
  ok('audio_url .wav with audio false', { ...F, audio_url: 'https://cdn.example.com/a.wav', audio: false }),
  bad('audio_url .ogg', { ...F, audio_url: 'https://cdn.example.com/a.ogg' }, 2102, '/audio_url'),
  bad('audio_url not a URL', { ...F, audio_url: 'a.mp3' }, 2001, '/audio_url'),
  ...intRange(F, 'seed', 0, 2147483647),
  ...wrongTypes(F, 'audio', ['yes']),
  ...wrongTypes(F, 'prompt_extend', [1]),
  ...unknownFields(F, ['image', 'img_url', 'size']),
];

validationTables('provider_d: validation tables', [
  { title: `model D: POST ${D}`, path: D, cases: modelD },
  { title: `model G: POST ${G}`, path: G, cases: modelG },
]);

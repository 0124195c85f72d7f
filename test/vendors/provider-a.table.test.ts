// Video model A: every constraint of the spec's field table, rules 1–7 and limits, one case per
// row, through a real gateway. Success is 200 (as documented for this endpoint); a validation
// failure is 400 with a task_info-shaped body (status failed, error {code, title, detail}).
import { b64, bad, dataUri, enumValues, imageBytes, intRange, malformedBodies, ok, unknownFields, validationTables, wrongTypes, type Case } from './support.ts';

const PATH = '/vendors/provider_a/v1/model_a/generation';
const P = { prompt: 'a paper boat on a rainy street' };
const URL_IMG = 'https://cdn.example.com/cat.png';
const VIDEO = 'https://cdn.example.com/clip.mp4';
const AUDIO = 'https://cdn.example.com/voice.wav';
const MB20 = 20 * 1024 * 1024;
const A = (name: string, body: unknown) => ok(name, body, 200);

const cases: Case[] = [
  // --- capabilities chosen by the media fields sent
  A('text-to-video: prompt only', P),
  A('keyframe mode: first_frame', { ...P, first_frame: URL_IMG }),
  A('keyframe mode: last_frame only, no prompt', { last_frame: URL_IMG }),
  A('keyframe mode: first_frame and last_frame', { first_frame: URL_IMG, last_frame: URL_IMG }),
  A('reference mode: reference_images', { ...P, reference_images: [URL_IMG] }),
  A('reference mode: reference_videos only', { reference_videos: [VIDEO] }),
  A('reference mode: reference_audios only', { reference_audios: [AUDIO] }),
  A('reference mode: images, videos and audios together', { ...P, reference_images: [URL_IMG], reference_videos: [VIDEO], reference_audios: [AUDIO] }),
  A('reference mode: file only', { file: 'https://docs.example.com/brief.pdf' }),
  A('reference mode: link only', { link: 'https://www.example.com/article' }),

  // --- rule 1: keyframe and reference modes are mutually exclusive (2004, see decisions)
  bad('first_frame with reference_images', { ...P, first_frame: URL_IMG, reference_images: [URL_IMG] }, 2004, '/first_frame'),
  bad('last_frame with reference_videos', { last_frame: URL_IMG, reference_videos: [VIDEO] }, 2004, '/first_frame'),
  bad('first_frame with reference_audios', { first_frame: URL_IMG, reference_audios: [AUDIO] }, 2004, '/first_frame'),
  bad('both frames with all three reference kinds', { first_frame: URL_IMG, last_frame: URL_IMG, reference_images: [URL_IMG], reference_videos: [VIDEO], reference_audios: [AUDIO] }, 2004),
  A('first_frame with an empty reference_images (empty means none)', { ...P, first_frame: URL_IMG, reference_images: [] }),
  A('first_frame with reference fields explicitly null', { ...P, first_frame: URL_IMG, reference_images: null, reference_videos: null, reference_audios: null }),

  // --- rule 2: at least one of prompt, a keyframe field or a reference field
  bad('an empty body', {}, 2002, '/prompt'),
  bad('prompt null and nothing else', { prompt: null }, 2002, '/prompt'),
  bad('an empty prompt and nothing else', { prompt: '' }, 2002, '/prompt'),
  bad('only parameters, no input', { resolution: '720p', duration: 5, audio: false }, 2002, '/prompt'),
  bad('every media field null', { prompt: null, first_frame: null, last_frame: null, reference_images: null, reference_videos: null, reference_audios: null, file: null, link: null }, 2002, '/prompt'),
  bad('only empty reference arrays', { reference_images: [], reference_videos: [], reference_audios: [] }, 2002, '/prompt'),

  // --- rule 3: file/link combinations are forwarded, not refused synchronously
  A('file and link together are accepted (the task fails later)', { file: 'https://docs.example.com/a.pdf', link: 'https://www.example.com/' }),
  A('file with first_frame is accepted', { file: 'https://docs.example.com/a.pdf', first_frame: URL_IMG }),
  A('link with last_frame is accepted', { link: 'https://www.example.com/', last_frame: URL_IMG }),
  A('file with reference_images is accepted', { ...P, file: 'https://docs.example.com/a.docx', reference_images: [URL_IMG] }),

  // --- rule 4: unknown properties are rejected
  ...unknownFields(P, ['model', 'negative_prompt', 'Prompt', 'reference_image', 'size']),

  // --- rule 6: image inputs as URL, data URI or bare Base64, mixed in one array
  A('first_frame as an https URL', { first_frame: URL_IMG }),
  A('first_frame as an http URL', { first_frame: 'http://cdn.example.com/cat.jpg' }),
  A('first_frame as a signed URL without extension', { first_frame: 'https://cdn.example.com/obj/8f2a?sig=abc' }),
  A('first_frame as a PNG data URI', { first_frame: dataUri('png') }),
  A('first_frame as a JPEG data URI', { first_frame: dataUri('jpeg') }),
  A('first_frame as an image/jpg data URI', { first_frame: dataUri('jpeg', 64, 'image/jpg') }),
  A('first_frame as bare Base64 PNG', { first_frame: b64('png') }),
  A('first_frame as bare Base64 JPEG', { first_frame: b64('jpeg') }),
  A('first_frame as bare Base64 BMP', { first_frame: b64('bmp') }),
  A('first_frame as bare Base64 WEBP', { first_frame: b64('webp') }),
  A('last_frame as bare Base64 without padding', { last_frame: b64('png', 65).replace(/=+$/, '') }),
  A('reference_images mixing URL, data URI and bare Base64', { ...P, reference_images: [URL_IMG, dataUri('webp'), b64('jpeg')] }),
  bad('first_frame Base64 that does not decode', { first_frame: 'iVBORw0KGgo$$$notbase64' }, 2103, '/first_frame'),
  bad('first_frame Base64 with an impossible length', { first_frame: 'iVBORw0KG' }, 2103, '/first_frame'),
  bad('first_frame Base64 with padding in the middle', { first_frame: 'iVBO=w0KGgoAAAA' }, 2103, '/first_frame'),
  bad('first_frame Base64 with line breaks', { first_frame: `${b64('png', 60)}\n${b64('png', 60)}` }, 2103, '/first_frame'),
  bad('first_frame data URI whose payload does not decode', { first_frame: 'data:image/png;base64,@@@@' }, 2103, '/first_frame'),
  bad('first_frame Base64 of bytes that are no image', { first_frame: b64('noise') }, 2103, '/first_frame'),
  bad('a reference image that does not decode, named by index', { ...P, reference_images: [URL_IMG, b64('png'), '%%%%'] }, 2103, '/reference_images/2'),
  bad('first_frame as a GIF (not in the allow-list)', { first_frame: b64('gif') }, 2102, '/first_frame'),
  bad('first_frame as a TIFF', { first_frame: b64('tiff') }, 2102, '/first_frame'),
  bad('first_frame as an image/gif data URI', { first_frame: dataUri('gif') }, 2102, '/first_frame'),
  bad('first_frame as a text/plain data URI', { first_frame: `data:text/plain;base64,${Buffer.from('hello').toString('base64')}` }, 2102, '/first_frame'),
  bad('first_frame as a data URI without ;base64', { first_frame: 'data:image/png,rawbytes' }, 2001, '/first_frame'),
  bad('first_frame as a malformed data URI', { first_frame: 'data:image/png;base64' }, 2001, '/first_frame'),
  bad('first_frame as an ftp URL', { first_frame: 'ftp://cdn.example.com/cat.png' }, 2001, '/first_frame'),
  bad('first_frame as an https URL without a host', { first_frame: 'https://' }, 2001, '/first_frame'),
  bad('first_frame as an empty string', { first_frame: '' }, 2001, '/first_frame'),
  A('first_frame decoded size exactly 20 MB', { first_frame: b64('png', MB20) }),
  bad('first_frame decoded size 20 MB + 1 byte', { first_frame: b64('jpeg', MB20 + 1) }, 2101, '/first_frame'),
  bad('a reference image over 20 MB, named by index', { ...P, reference_images: [URL_IMG, dataUri('png', MB20 + 1)] }, 2101, '/reference_images/1'),
  A('reference_videos and reference_audios accept URLs only: URL', { reference_videos: [VIDEO], reference_audios: [AUDIO] }),
  bad('reference_videos item as Base64', { reference_videos: [b64('png')] }, 2001, '/reference_videos/0'),
  bad('reference_audios item as a data URI', { reference_audios: ['data:audio/wav;base64,UklGRg=='] }, 2001, '/reference_audios/0'),

  // --- rule 7: extensions of video and audio URLs; extension-less URLs pass
  A('reference video .mov', { reference_videos: ['https://cdn.example.com/a.mov'] }),
  A('reference video .MP4 in capitals', { reference_videos: ['https://cdn.example.com/A.MP4'] }),
  A('reference video .mp4 with a query string', { reference_videos: ['https://cdn.example.com/a.mp4?X-Amz-Signature=abc'] }),
  A('reference video without an extension (signed link)', { reference_videos: ['https://cdn.example.com/v/9f8e7d?token=x'] }),
  A('reference video with an unrecognisable extension', { reference_videos: ['https://cdn.example.com/v/clip.v2final'] }),
  bad('reference video .avi', { reference_videos: ['https://cdn.example.com/a.avi'] }, 2102, '/reference_videos/0'),
  bad('reference video .webm as second item', { reference_videos: [VIDEO, 'https://cdn.example.com/b.webm'] }, 2102, '/reference_videos/1'),
  bad('reference video given an audio file', { reference_videos: ['https://cdn.example.com/a.mp3'] }, 2102, '/reference_videos/0'),
  A('reference audio .mp3', { reference_audios: ['https://cdn.example.com/a.mp3'] }),
  A('reference audio .WAV in capitals', { reference_audios: ['https://cdn.example.com/A.WAV'] }),
  A('reference audio without an extension', { reference_audios: ['https://cdn.example.com/audio/123'] }),
  bad('reference audio .aac', { reference_audios: ['https://cdn.example.com/a.aac'] }, 2102, '/reference_audios/0'),
  bad('reference audio .flac', { reference_audios: ['https://cdn.example.com/a.flac'] }, 2102, '/reference_audios/0'),
  bad('reference audio given a video file', { reference_audios: ['https://cdn.example.com/a.mp4'] }, 2102, '/reference_audios/0'),
  bad('reference video not a URL', { reference_videos: ['clip.mp4'] }, 2001, '/reference_videos/0'),
  bad('reference audio as an ftp URL', { reference_audios: ['ftp://cdn.example.com/a.wav'] }, 2001, '/reference_audios/0'),

  // --- array limits
  A('reference_images with 10 items', { ...P, reference_images: Array(10).fill(URL_IMG) }),
  bad('reference_images with 11 items', { ...P, reference_images: Array(11).fill(URL_IMG) }, 2003, '/reference_images'),
  A('reference_videos with 5 items', { reference_videos: Array(5).fill(VIDEO) }),
  bad('reference_videos with 6 items', { reference_videos: Array(6).fill(VIDEO) }, 2003, '/reference_videos'),
  A('reference_audios with 5 items', { reference_audios: Array(5).fill(AUDIO) }),
  bad('reference_audios with 6 items', { reference_audios: Array(6).fill(AUDIO) }, 2003, '/reference_audios'),

  // --- prompt: at most 20000 characters are used; longer is truncated, not refused
  A('prompt of 20000 characters', { prompt: 'x'.repeat(20000) }),
  A('prompt of 20001 characters (truncated upstream)', { prompt: 'x'.repeat(20001) }),
  A('prompt of 100000 characters (truncated upstream)', { prompt: 'x'.repeat(100000) }),
  ...wrongTypes({}, 'prompt', [1, true, ['x'], { text: 'x' }]),

  // --- types of every other field
  ...wrongTypes(P, 'first_frame', [1, true, [URL_IMG], { url: URL_IMG }]),
  ...wrongTypes(P, 'last_frame', [0, false]),
  ...wrongTypes(P, 'reference_images', [URL_IMG, { 0: URL_IMG }, 3]),
  bad('reference_images item of wrong type', { ...P, reference_images: [1] }, 2001, '/reference_images/0'),
  bad('reference_images item null', { ...P, reference_images: [null] }, 2001, '/reference_images/0'),
  ...wrongTypes(P, 'reference_videos', [VIDEO, true]),
  bad('reference_videos item of wrong type', { reference_videos: [5] }, 2001, '/reference_videos/0'),
  ...wrongTypes(P, 'reference_audios', [AUDIO, 1]),
  bad('reference_audios item of wrong type', { reference_audios: [true] }, 2001, '/reference_audios/0'),
  ...wrongTypes(P, 'file', [5, ['https://a.example.com/x.pdf'], 'docs/brief.pdf', 'ftp://a.example.com/x.pdf']),
  ...wrongTypes(P, 'link', [5, 'www.example.com', 'mailto:someone@example.com']),
  ...wrongTypes(P, 'resolution', [1080, true, null, ['1080p']]),
  ...wrongTypes(P, 'ratio', [16, null, { w: 16, h: 9 }]),
  ...wrongTypes(P, 'duration', ['5', 5.5, null, true]),
  ...wrongTypes(P, 'audio', ['true', 1, null]),
  ...wrongTypes(P, 'seed', ['42', 4.2, true, [1]]),
  ...wrongTypes(P, 'prompt_extend', ['yes', 0, null]),
  A('nullable fields sent as null', { ...P, first_frame: null, last_frame: null, reference_images: null, reference_videos: null, reference_audios: null, file: null, link: null, seed: null }),

  // --- resolution: enum, case-insensitive; malformed strings 2001, unsupported ones 2003
  ...enumValues(P, 'resolution', ['480p', '720p', '1080p'], 200),
  A('resolution 1080P (case-insensitive)', { ...P, resolution: '1080P' }),
  A('resolution 720P (case-insensitive)', { ...P, resolution: '720P' }),
  bad('resolution 2160p (well-formed, unsupported)', { ...P, resolution: '2160p' }, 2003, '/resolution'),
  bad('resolution 360p (well-formed, unsupported)', { ...P, resolution: '360p' }, 2003, '/resolution'),
  bad('resolution 4k (malformed)', { ...P, resolution: '4k' }, 2001, '/resolution'),
  bad('resolution 1920x1080 (malformed)', { ...P, resolution: '1920x1080' }, 2001, '/resolution'),
  bad('resolution empty string', { ...P, resolution: '' }, 2001, '/resolution'),

  // --- ratio: enum, case-insensitive
  ...enumValues(P, 'ratio', ['16:9', '4:3', '1:1', '3:4', '9:16', 'adaptive'], 200),
  A('ratio ADAPTIVE (case-insensitive)', { ...P, ratio: 'ADAPTIVE' }),
  A('ratio Adaptive (case-insensitive)', { ...P, ratio: 'Adaptive' }),
  bad('ratio 21:9 (well-formed, unsupported)', { ...P, ratio: '21:9' }, 2003, '/ratio'),
  bad('ratio 2:1 (well-formed, unsupported)', { ...P, ratio: '2:1' }, 2003, '/ratio'),
  bad('ratio 16/9 (malformed)', { ...P, ratio: '16/9' }, 2001, '/ratio'),
  bad('ratio wide (malformed)', { ...P, ratio: 'wide' }, 2001, '/ratio'),

  // --- duration: 2..30 or -1
  ...intRange(P, 'duration', 2, 30, 200),
  A('duration -1 (the model chooses)', { ...P, duration: -1 }),
  bad('duration -2', { ...P, duration: -2 }, 2003, '/duration'),
  bad('duration 0', { ...P, duration: 0 }, 2003, '/duration'),
  A('duration 30 with a reference video (the 30 s total is checked upstream)', { reference_videos: [VIDEO], duration: 30 }),

  // --- seed: 0..2147483647
  ...intRange(P, 'seed', 0, 2147483647, 200),

  // --- booleans
  A('audio false', { ...P, audio: false }),
  A('prompt_extend false', { ...P, prompt_extend: false }),

  // --- several problems at once: the primary code follows the policy order, every one is listed
  bad('unknown field and a bad type: 2001 first', { ...P, foo: 1, duration: 'long' }, 2001, '/foo'),
  bad('missing input and an unknown field: the schema fails first (2004)', { foo: 1 }, 2004, '/foo'),
  bad('range and format problems: 2001 first', { ...P, duration: 31, resolution: '4k' }, 2001, '/duration'),

  ...malformedBodies(),
];

// Bodies big enough to go through the media pool, with valid and invalid content.
cases.push(
  A('a 3 MB Base64 PNG (parsed in the media pool)', { ...P, first_frame: b64('png', 3 * 1024 * 1024) }),
  A('ten 1 MB reference images of every accepted format', { ...P, reference_images: ['png', 'jpeg', 'bmp', 'webp', 'png', 'jpeg', 'bmp', 'webp', 'png', 'jpeg'].map((k) => dataUri(k as 'png', 1024 * 1024)) }),
  bad('a 3 MB Base64 that does not decode (pool)', { ...P, first_frame: `${b64('png', 3 * 1024 * 1024)}!` }, 2103, '/first_frame'),
  bad('a 3 MB GIF (pool)', { ...P, first_frame: imageBytes('gif', 3 * 1024 * 1024).toString('base64') }, 2102, '/first_frame'),
);

validationTables('video model A: validation table', [{ title: `POST ${PATH}`, path: PATH, cases, shape: 'task_info' }]);

// Text-to-video model E (provider_e): every constraint of the spec's field table and limits.
import { bad, enumValues, intRange, malformedBodies, maxLength, ok, unknownFields, validationTables, wrongTypes, type Case } from './support.ts';

const E = '/vendors/provider_e/v1/model_e/generation';
const P = { prompt: 'a timelapse of clouds over mountains' };

const cases: Case[] = [
  ok('prompt only (every default applies)', P),
  ok('every field given', { ...P, negative_prompt: 'blur', size: '1080*1920', duration: 15, prompt_extend: true, shot_type: 'multi', audio: false, audio_url: 'https://cdn.example.com/a.mp3', seed: 9, safety_filter: false }),
  bad('prompt missing', {}, 2002, '/prompt'),
  bad('prompt missing, other fields given', { size: '1920*1080' }, 2002, '/prompt'),
  ...maxLength({}, 'prompt', 2000),
  bad('prompt empty', { prompt: '' }, 2003, '/prompt'),
  ...maxLength(P, 'negative_prompt', 500),
  // size: the five 1080P-tier sizes
  ...enumValues(P, 'size', ['1920*1080', '1080*1920', '1440*1440', '1632*1248', '1248*1632']),
  bad('size 1280*720 (well-formed, not offered)', { ...P, size: '1280*720' }, 2003, '/size'),
  bad('size 1080*1080 (well-formed, not offered)', { ...P, size: '1080*1080' }, 2003, '/size'),
  bad('size 1920x1080 (malformed)', { ...P, size: '1920x1080' }, 2001, '/size'),
  bad('size 1080P (malformed)', { ...P, size: '1080P' }, 2001, '/size'),
  bad('size with a trailing space (malformed)', { ...P, size: '1920*1080 ' }, 2001, '/size'),
  ...wrongTypes(P, 'size', [1920, null]),
  // duration 5 | 10 | 15
  ...enumValues(P, 'duration', [5, 10, 15]),
  bad('duration 4', { ...P, duration: 4 }, 2003, '/duration'),
  bad('duration 6', { ...P, duration: 6 }, 2003, '/duration'),
  bad('duration 14', { ...P, duration: 14 }, 2003, '/duration'),
  bad('duration 16', { ...P, duration: 16 }, 2003, '/duration'),
  bad('duration 0', { ...P, duration: 0 }, 2003, '/duration'),
  ...wrongTypes(P, 'duration', ['5', 5.5, null]),
  // shot_type single | multi, effective only with prompt_extend
  ...enumValues(P, 'shot_type', ['single', 'multi']),
  ok('shot_type multi with prompt_extend false (accepted, has no effect)', { ...P, shot_type: 'multi', prompt_extend: false }),
  bad('shot_type Multi (case-sensitive)', { ...P, shot_type: 'Multi' }, 2001, '/shot_type'),
  bad('shot_type triple', { ...P, shot_type: 'triple' }, 2001, '/shot_type'),
  ...wrongTypes(P, 'shot_type', [true, 2]),
  bad('multi_shots (the prose name) is not a parameter', { ...P, multi_shots: true }, 2004, '/multi_shots'),
  // audio and audio_url
  ok('audio false', { ...P, audio: false }),
  ok('audio_url .wav', { ...P, audio_url: 'https://cdn.example.com/a.wav' }),
  ok('audio_url .MP3 in capitals', { ...P, audio_url: 'https://cdn.example.com/A.MP3' }),
  ok('audio_url without an extension', { ...P, audio_url: 'https://cdn.example.com/audio/42?sig=1' }),
  ok('audio_url with audio false (audio_url wins)', { ...P, audio: false, audio_url: 'https://cdn.example.com/a.wav' }),
  bad('audio_url .ogg', { ...P, audio_url: 'https://cdn.example.com/a.ogg' }, 2102, '/audio_url'),
  bad('audio_url .mp4', { ...P, audio_url: 'https://cdn.example.com/a.mp4' }, 2102, '/audio_url'),
  bad('audio_url not a URL', { ...P, audio_url: 'voice.wav' }, 2001, '/audio_url'),
  bad('audio_url as Base64', { ...P, audio_url: 'UklGRiQAAABXQVZFZm10' }, 2001, '/audio_url'),
  ...wrongTypes(P, 'audio_url', [1, null]),
  ...wrongTypes(P, 'audio', ['true', 1, null]),
  // seed, booleans
  ...intRange(P, 'seed', 0, 2147483647),
  ...wrongTypes(P, 'seed', ['1', 1.5]),
  ok('prompt_extend false', { ...P, prompt_extend: false }),
  ok('safety_filter false', { ...P, safety_filter: false }),
  ...wrongTypes(P, 'prompt_extend', ['on', null]),
  ...wrongTypes(P, 'safety_filter', ['off', 1]),
  ...wrongTypes({}, 'prompt', [42, null]),
  ...wrongTypes(P, 'negative_prompt', [false]),
  ...unknownFields(P, ['model', 'resolution', 'n']),
  bad('several problems: missing prompt first', { duration: 7, size: 'big' }, 2002, '/duration'),
  ...malformedBodies(),
];

validationTables('model E: validation table', [{ title: `POST ${E}`, path: E, cases }]);

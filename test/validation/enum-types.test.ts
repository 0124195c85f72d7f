// A value of the wrong JSON type where a route expects one of a list is a type mismatch, 2001
// (spec code table), on every route: whether the schema says `type` beside its `enum` (the media
// routes) or lists bare values as OpenAI's does (chat). A value of the right type that is not
// offered stays what the policy says: 2003 for a number (duration 7 of 5/10/15) or a string
// matching the field's pattern (size 1280*720), 2001 for a string outside a plain list.
import { bad, validationTables, type Case } from '../vendors/support.ts';

const CHAT = '/v1/chat/completions';
const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const VIDEO_B = '/vendors/provider_b/v1/tob/video-diffusion';
const videoB = { prompt: 'https://example.com/cat.png the cat blinks', video_type: 0 };
const E = '/vendors/provider_e/v1/model_e/generation';
const e = { prompt: 'a timelapse of clouds over mountains' };

const chatCases: Case[] = [
  // the five: a number where text values are listed
  bad('service_tier 1', { ...chat, service_tier: 1 }, 2001, '/service_tier'),
  bad('verbosity 1', { ...chat, verbosity: 1 }, 2001, '/verbosity'),
  bad('reasoning_effort 2', { ...chat, reasoning_effort: 2 }, 2001, '/reasoning_effort'),
  bad('modalities [1]', { ...chat, modalities: [1] }, 2001, '/modalities/0'),
  bad('a message whose role is 1', { ...chat, messages: [{ role: 1, content: 'hi' }] }, 2001, '/messages/0/role'),
  // other wrong types
  bad('service_tier true', { ...chat, service_tier: true }, 2001, '/service_tier'),
  bad('verbosity ["low"]', { ...chat, verbosity: ['low'] }, 2001, '/verbosity'),
  bad('reasoning_effort {}', { ...chat, reasoning_effort: {} }, 2001, '/reasoning_effort'),
  // right type, not listed: a string outside a plain list is malformed by the policy (2001)
  bad('service_tier "turbo"', { ...chat, service_tier: 'turbo' }, 2001, '/service_tier'),
  bad('reasoning_effort "extreme"', { ...chat, reasoning_effort: 'extreme' }, 2001, '/reasoning_effort'),
];

const mediaCases: Array<{ title: string; path: string; cases: Case[] }> = [
  {
    title: 'image tool video (video_type: integer enum [0, 1])',
    path: VIDEO_B,
    cases: [
      bad('video_type 2 (right type, not offered)', { ...videoB, video_type: 2 }, 2003, '/video_type'),
      bad('video_type "1"', { ...videoB, video_type: '1' }, 2001, '/video_type'),
      bad('video_type true', { ...videoB, video_type: true }, 2001, '/video_type'),
    ],
  },
  {
    title: 'model E (duration: integer enum, size: pattern-guarded string enum)',
    path: E,
    cases: [
      bad('duration 7 (right type, not offered)', { ...e, duration: 7 }, 2003, '/duration'),
      bad('duration "10"', { ...e, duration: '10' }, 2001, '/duration'),
      bad('size 1280*720 (right type, well-formed, not offered)', { ...e, size: '1280*720' }, 2003, '/size'),
      bad('size 1920 (a number)', { ...e, size: 1920 }, 2001, '/size'),
    ],
  },
];

validationTables('enum values of the wrong JSON type are 2001 on every route', [
  { title: 'chat completion (bare enums)', path: CHAT, cases: chatCases },
  ...mediaCases,
]);

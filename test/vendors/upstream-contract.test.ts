// Contract tests of provider_a, provider_d (models D and G), provider_e and provider_f against a
// real upstream HTTP server that answers with each vendor's own fixtures: the exact upstream
// request built from a client request (renames, defaults, case normalisation, truncation, seed
// series, media forms, auth) and the exact gateway response built from each fixture.
import { expect } from 'chai';
import { jwtVerify } from 'jose';
import type { Gateway } from '../../engine/gateway.ts';
import { mediaBlobs } from '../../engine/media/blobs.ts';
import { call, newTenant, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { b64, dataUri } from './support.ts';
import { FILES, FixtureUpstream, vendorsDirWith } from './fixture-upstream.ts';

const A = '/vendors/provider_a/v1/model_a/generation';
const D = '/vendors/provider_d/v1/model_d/generation';
const G = '/vendors/provider_d/v1/model_g/generation';
const E = '/vendors/provider_e/v1/model_e/generation';
const F = '/vendors/provider_f/v1/model_f/text-to-video/generation';
const UP = {
  a: '/a/api/v3/contents/generations/tasks',
  d: '/d/api/v1/services/aigc/text2image/image-synthesis',
  g: '/d/api/v1/services/aigc/video-generation/video-synthesis',
  e: '/e/api/v1/services/aigc/video-generation/video-synthesis',
  f: '/f/v1/videos/text2video',
};
const F_ACCESS = 'ak-model-f-test';
const F_SECRET = 'sk-model-f-test-secret-0123456789';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('vendor contracts against a real upstream serving the fixtures', function () {
  this.timeout(30_000);
  let up: FixtureUpstream;
  let gw: Gateway;
  let key: string;

  before(async () => {
    up = await new FixtureUpstream()
      .route('/a', 'provider_a', 'video_generation', '/api/v3/contents/generations/tasks', '/api/v3/contents/generations/tasks/{id}')
      .route('/d', 'provider_d', 'image_generation', '/api/v1/services/aigc/text2image/image-synthesis', '/api/v1/tasks/{id}')
      .route('/d', 'provider_d', 'video_generation', '/api/v1/services/aigc/video-generation/video-synthesis', '/api/v1/tasks/{id}')
      .route('/e', 'provider_e', 'video_generation', '/api/v1/services/aigc/video-generation/video-synthesis', '/api/v1/tasks/{id}')
      .route('/f', 'provider_f', 'text_to_video', '/v1/videos/text2video', '/v1/videos/text2video/{id}')
      .start();
    gw = await startTestGateway({
      sandbox: false,
      vendorsDir: vendorsDirWith(['provider_a', 'provider_d', 'provider_e', 'provider_f']),
      upstreams: {
        provider_a: { base_url: `${up.url}/a`, credentials: { api_key: 'key-a' } },
        provider_d: { base_url: `${up.url}/d`, credentials: { api_key: 'key-d' } },
        provider_e: { base_url: `${up.url}/e`, credentials: { api_key: 'key-e' } },
        provider_f: { base_url: `${up.url}/f`, credentials: { access_key: F_ACCESS, secret_key: F_SECRET } },
      },
    });
    ({ key } = await newTenant(gw, { credits: 10_000_000 }));
  });
  after(async () => {
    await gw?.close();
    await up?.close();
  });

  /** Create, wait for the task to finish, and return the upstream submit and the final GET. */
  async function run(path: string, body: unknown, upstreamPath: string, status = 202) {
    const before = up.submits(upstreamPath).length;
    const created = await call(gw.url, 'POST', path, { key, body });
    expect(created.status, created.text).to.equal(status);
    expect(Object.keys(created.body)).to.deep.equal(['task_info']);
    const info = created.body.task_info;
    expect(info.status).to.equal('pending');
    const done = await waitForTask(gw.url, `${path}/${info.id}`, key);
    const submits = up.submits(upstreamPath);
    expect(submits.length).to.equal(before + 1);
    return { info, submit: submits.at(-1)!, done: done.body, upstreamId: lastTaskId() };
  }
  const lastTaskId = () => [...up.tasks.keys()].at(-1)!;

  function expectCompleted(done: any, info: any, field: string, urls: string[]) {
    expect(done).to.deep.equal({ task_info: { id: info.id, status: 'completed', created_at: info.created_at, updated_at: done.task_info.updated_at }, [field]: urls });
    expect(done.task_info.updated_at).to.match(ISO);
  }

  function expectFailed(done: any, info: any, code: number, title: string, detail: string) {
    expect(done).to.deep.equal({ task_info: { id: info.id, status: 'failed', created_at: info.created_at, updated_at: done.task_info.updated_at, error: { code, title, detail } } });
  }

  describe('video model A', () => {
    it('text-to-video: defaults applied, resolution and ratio lower-cased, seed left out; created → 200, succeeded → videos', async () => {
      const { info, submit, done, upstreamId } = await run(A, { prompt: 'a paper boat', resolution: '720P', ratio: 'ADAPTIVE' }, UP.a, 200);
      expect(submit.body).to.deep.equal({
        model: 'model_a',
        content: [{ type: 'text', text: 'a paper boat' }],
        resolution: '720p', ratio: 'adaptive', duration: 5, generate_audio: true, prompt_extend: true,
      });
      expect(submit.headers.authorization).to.equal('Bearer key-a');
      expect(submit.headers['content-type']).to.equal('application/json');
      expect(submit.headers.traceparent).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      expectCompleted(done, info, 'videos', [`${FILES}/${upstreamId}/video.mp4`]);
    });

    it('every default of the field table: resolution 1080p, ratio adaptive, duration 5, audio and prompt_extend on, seed auto', async () => {
      const { submit } = await run(A, { prompt: 'defaults' }, UP.a, 200);
      expect(submit.body).to.deep.equal({
        model: 'model_a',
        content: [{ type: 'text', text: 'defaults' }],
        resolution: '1080p', ratio: 'adaptive', duration: 5, generate_audio: true, prompt_extend: true,
      });
    });

    it('a prompt over 20000 characters is truncated to its first 20000 characters (code points)', async () => {
      const prompt = `${'x'.repeat(19_999)}😀tail that is cut`;
      const { submit } = await run(A, { prompt }, UP.a, 200);
      const text: string = submit.body.content[0].text;
      expect([...text]).to.have.length(20_000);
      expect(text).to.equal(`${'x'.repeat(19_999)}😀`);
    });

    it('a prompt of exactly 20000 characters is sent whole', async () => {
      const { submit } = await run(A, { prompt: 'y'.repeat(20_000) }, UP.a, 200);
      expect(submit.body.content[0].text).to.equal('y'.repeat(20_000));
    });

    it('keyframe mode: bare Base64 becomes a data URI, a data URI and a URL pass as sent; seed 0, duration -1 and false flags are kept', async () => {
      const first = b64('png', 300);
      const last = dataUri('jpeg', 200);
      const { submit } = await run(A, { prompt: 'turn', first_frame: first, last_frame: last, seed: 0, duration: -1, audio: false, prompt_extend: false, resolution: '480p', ratio: '9:16' }, UP.a, 200);
      expect(submit.body).to.deep.equal({
        model: 'model_a',
        content: [
          { type: 'text', text: 'turn' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${first}` }, role: 'first_frame' },
          { type: 'image_url', image_url: { url: last }, role: 'last_frame' },
        ],
        resolution: '480p', ratio: '9:16', duration: -1, seed: 0, generate_audio: false, prompt_extend: false,
      });
    });

    it('reference mode: every input becomes a content item with its role, in array order', async () => {
      const webp = b64('webp', 100);
      const png = dataUri('png', 100);
      const { submit } = await run(A, {
        prompt: 'Image 1 and Image 2 dance to Video 1',
        reference_images: ['https://cdn.example.com/1.png', webp, png],
        reference_videos: ['https://cdn.example.com/v.mp4'],
        reference_audios: ['https://cdn.example.com/a.wav', 'https://cdn.example.com/b'],
        seed: 2147483647,
      }, UP.a, 200);
      expect(submit.body.content).to.deep.equal([
        { type: 'text', text: 'Image 1 and Image 2 dance to Video 1' },
        { type: 'image_url', image_url: { url: 'https://cdn.example.com/1.png' }, role: 'reference_image' },
        { type: 'image_url', image_url: { url: `data:image/webp;base64,${webp}` }, role: 'reference_image' },
        { type: 'image_url', image_url: { url: png }, role: 'reference_image' },
        { type: 'video_url', video_url: { url: 'https://cdn.example.com/v.mp4' }, role: 'reference_video' },
        { type: 'audio_url', audio_url: { url: 'https://cdn.example.com/a.wav' }, role: 'reference_audio' },
        { type: 'audio_url', audio_url: { url: 'https://cdn.example.com/b' }, role: 'reference_audio' },
      ]);
      expect(submit.body.seed).to.equal(2147483647);
    });

    it('large Base64 media (parsed in the pool, held as a blob) reaches the upstream byte for byte, and is released', async () => {
      const big = b64('png', 4 * 1024 * 1024);
      const refs = [b64('jpeg', 700 * 1024), dataUri('webp', 900 * 1024)];
      const { submit } = await run(A, { prompt: 'big', reference_images: refs, reference_videos: ['https://cdn.example.com/v.mov'] }, UP.a, 200);
      expect(submit.body.content[1].image_url.url).to.equal(`data:image/jpeg;base64,${refs[0]}`);
      expect(submit.body.content[2].image_url.url).to.equal(refs[1]);
      const key2 = await run(A, { first_frame: big }, UP.a, 200);
      expect(key2.submit.body.content).to.deep.equal([{ type: 'image_url', image_url: { url: `data:image/png;base64,${big}` }, role: 'first_frame' }]);
      expect(mediaBlobs.size).to.equal(0);
    });

    it('file and link: forwarded as content items; the upstream refuses them and the task fails with 3002 and its message', async () => {
      up.replyOnce(UP.a, 400, { error: { code: 'InvalidParameter', message: 'file and link cannot be used together', param: 'content', type: 'BadRequest' } });
      const { info, submit, done } = await run(A, { file: 'https://docs.example.com/brief.pdf', link: 'https://www.example.com/page' }, UP.a, 200);
      expect(submit.body.content).to.deep.equal([
        { type: 'file_url', file_url: { url: 'https://docs.example.com/brief.pdf' } },
        { type: 'link_url', link_url: { url: 'https://www.example.com/page' } },
      ]);
      expectFailed(done, info, 3002, 'Upstream Service Request Failed', 'The provider refused the request: file and link cannot be used together');
    });

    it('the failed fixture → failed with 3005 and the upstream message and code', async () => {
      const { info, done } = await run(A, { prompt: 'FAILME' }, UP.a, 200);
      expectFailed(done, info, 3005, 'Upstream Service Execution Failed',
        'The provider could not complete the task: The request failed because the input image may contain sensitive information. (InputImageSensitiveContentDetected)');
    });

    it('queued → pending, running → processing, succeeded → completed', async () => {
      const created = await call(gw.url, 'POST', A, { key, body: { prompt: 'HOLDME' } });
      const id = created.body.task_info.id;
      const processing = await waitForTask(gw.url, `${A}/${id}`, key, ['processing']);
      expect(processing.body).to.deep.equal({ task_info: { id, status: 'processing', created_at: created.body.task_info.created_at, updated_at: processing.body.task_info.updated_at } });
      up.release(lastTaskId());
      const done = await waitForTask(gw.url, `${A}/${id}`, key);
      expect(done.body.task_info.status).to.equal('completed');
    });
  });

  describe('text-to-image model D', () => {
    it('defaults applied (size 1280*1280, n 4, prompt_extend false, safety on) under input/parameters; X-Async header; four images', async () => {
      const { info, submit, done, upstreamId } = await run(D, { prompt: 'a red fox' }, UP.d);
      expect(submit.body).to.deep.equal({
        model: 'model_d',
        input: { prompt: 'a red fox' },
        parameters: { size: '1280*1280', n: 4, prompt_extend: false, content_check: true },
      });
      expect(submit.headers['x-async']).to.equal('enable');
      expect(submit.headers.authorization).to.equal('Bearer key-d');
      expectCompleted(done, info, 'images', [0, 1, 2, 3].map((i) => `${FILES}/${upstreamId}/${i}.png`));
    });

    it('every field renamed into place; with n > 1 the upstream gets seed, seed+1, ... (wrapping past 2147483647)', async () => {
      const { submit } = await run(D, { prompt: 'fox', negative_prompt: 'blurry', size: '1024*1536', n: 4, prompt_extend: true, seed: 2147483646, safety_filter: false }, UP.d);
      expect(submit.body).to.deep.equal({
        model: 'model_d',
        input: { prompt: 'fox', negative_prompt: 'blurry' },
        parameters: { size: '1024*1536', n: 4, prompt_extend: true, seed: 2147483646, seeds: [2147483646, 2147483647, 0, 1], content_check: false },
      });
    });

    it('seed series for n = 1 and n = 3', async () => {
      const one = await run(D, { prompt: 'a', n: 1, seed: 7 }, UP.d);
      expect(one.submit.body.parameters).to.deep.include({ n: 1, seed: 7, seeds: [7] });
      const three = await run(D, { prompt: 'b', n: 3, seed: 0 }, UP.d);
      expect(three.submit.body.parameters).to.deep.include({ n: 3, seed: 0, seeds: [0, 1, 2] });
    });

    it('the failed fixture → 3005 with the upstream message and code', async () => {
      const { info, done } = await run(D, { prompt: 'FAILME' }, UP.d);
      expectFailed(done, info, 3005, 'Upstream Service Execution Failed', 'The provider could not complete the task: An internal error occurred while generating the images. (InternalError.Algo)');
    });

    it('a refused parameter at submission → 3002 naming it (descriptor error map)', async () => {
      up.replyOnce(UP.d, 400, { code: 'InvalidParameter', message: 'size is not supported by this model', request_id: 'r1' });
      const { info, done } = await run(D, { prompt: 'x' }, UP.d);
      expectFailed(done, info, 3002, 'Upstream Service Request Failed', 'The provider refused a parameter: size is not supported by this model');
    });
  });

  describe('image-to-video model G', () => {
    it('Base64 first_frame as data URI in input.img_url; resolution upper-cased for the upstream; audio_url replaces audio; status route answers', async () => {
      const jpeg = b64('jpeg', 500);
      const { info, submit, done, upstreamId } = await run(G, { first_frame: jpeg, prompt: 'the cat yawns', resolution: '720P', audio_url: 'https://cdn.example.com/purr.mp3', seed: 3 }, UP.g);
      expect(submit.body).to.deep.equal({
        model: 'model_g',
        input: { prompt: 'the cat yawns', img_url: `data:image/jpeg;base64,${jpeg}`, audio_url: 'https://cdn.example.com/purr.mp3' },
        parameters: { resolution: '720P', duration: 5, prompt_extend: true, seed: 3, content_check: true },
      });
      expectCompleted(done, info, 'videos', [`${FILES}/${upstreamId}/video.mp4`]);
    });

    it('the failed fixture (content inspection) → 3005 with the descriptor detail', async () => {
      const { info, done } = await run(G, { first_frame: 'https://cdn.example.com/c.png', prompt: 'FAILME' }, UP.g);
      expectFailed(done, info, 3005, 'Upstream Service Execution Failed', "The provider's content inspection refused the input or the output.");
    });

    it('a model D task is not readable on the model G status route', async () => {
      const created = await call(gw.url, 'POST', D, { key, body: { prompt: 'x' } });
      const r = await call(gw.url, 'GET', `${G}/${created.body.task_info.id}`, { key });
      expect(r.status).to.equal(404);
      expect(r.body.error_code).to.equal(2005);
    });
  });

  describe('text-to-video model E', () => {
    it('defaults applied (1920*1080, 5 s, prompt_extend on, shot_type single, audio on, safety on)', async () => {
      const { info, submit, done, upstreamId } = await run(E, { prompt: 'clouds' }, UP.e);
      expect(submit.body).to.deep.equal({
        model: 'model_e',
        input: { prompt: 'clouds' },
        parameters: { size: '1920*1080', duration: 5, prompt_extend: true, shot_type: 'single', audio: true, content_check: true },
      });
      expect(submit.headers['x-async']).to.equal('enable');
      expect(submit.headers.authorization).to.equal('Bearer key-e');
      expectCompleted(done, info, 'videos', [`${FILES}/${upstreamId}/video.mp4`]);
    });

    it('shot_type is sent only with prompt_extend; audio_url overrides audio', async () => {
      const { submit } = await run(E, { prompt: 'talk', negative_prompt: 'blur', size: '1248*1632', duration: 15, prompt_extend: false, shot_type: 'multi', audio: false, audio_url: 'https://cdn.example.com/a.wav', seed: 11, safety_filter: false }, UP.e);
      expect(submit.body).to.deep.equal({
        model: 'model_e',
        input: { prompt: 'talk', negative_prompt: 'blur', audio_url: 'https://cdn.example.com/a.wav' },
        parameters: { size: '1248*1632', duration: 15, prompt_extend: false, seed: 11, content_check: false },
      });
      const multi = await run(E, { prompt: 'talk', shot_type: 'multi', audio: false }, UP.e);
      expect(multi.submit.body.parameters).to.deep.equal({ size: '1920*1080', duration: 5, prompt_extend: true, shot_type: 'multi', audio: false, content_check: true });
    });

    it('the failed fixture → 3005 with the descriptor detail', async () => {
      const { info, done } = await run(E, { prompt: 'FAILME' }, UP.e);
      expectFailed(done, info, 3005, 'Upstream Service Execution Failed', "The provider's content inspection refused the input or the output.");
    });
  });

  describe('text-to-video model F', () => {
    it('authenticates with an HS256 JWT signed from the access and secret keys', async () => {
      const { submit } = await run(F, { prompt: 'snow' }, UP.f);
      const token = String(submit.headers.authorization).replace(/^Bearer /, '');
      const { payload, protectedHeader } = await jwtVerify(token, new TextEncoder().encode(F_SECRET), { issuer: F_ACCESS });
      expect(protectedHeader.alg).to.equal('HS256');
      expect(payload.exp! - payload.iat!).to.equal(1800);
      expect(payload.nbf!).to.be.at.most(Math.floor(Date.now() / 1000));
    });

    it('defaults applied; duration as a string, as the upstream takes it', async () => {
      const { info, submit, done, upstreamId } = await run(F, { prompt: 'a samurai' }, UP.f);
      expect(submit.body).to.deep.equal({ model_name: 'model_f', prompt: 'a samurai', multi_shot: false, sound: 'off', mode: 'std', aspect_ratio: '16:9', duration: '5' });
      expectCompleted(done, info, 'videos', [`${FILES}/${upstreamId}/video.mp4`]);
    });

    it('custom shots: prompt dropped, shots indexed, frames and element images as bare Base64 or URL', async () => {
      const jpeg = b64('jpeg', 120);
      const png = b64('png', 90);
      const { submit } = await run(F, {
        prompt: 'ignored in customize mode', negative_prompt: 'rain',
        multi_shot: true, shot_type: 'customize', duration: 8,
        multi_prompt: [{ prompt: 'a door opens', duration: 3 }, { prompt: '<<<element_1>>> steps through', duration: 5 }],
        elements: [{ frontal_image: `data:image/png;base64,${png}`, reference_images: ['https://cdn.example.com/side.png'] }],
        first_frame: `data:image/jpeg;base64,${jpeg}`, last_frame: 'https://cdn.example.com/end.png',
        sound: 'on', mode: 'pro', aspect_ratio: '9:16',
      }, UP.f);
      expect(submit.body).to.deep.equal({
        model_name: 'model_f',
        negative_prompt: 'rain',
        multi_shot: true,
        shot_type: 'customize',
        multi_prompt: [{ index: 1, prompt: 'a door opens', duration: '3' }, { index: 2, prompt: '<<<element_1>>> steps through', duration: '5' }],
        sound: 'on', mode: 'pro', aspect_ratio: '9:16', duration: '8',
        image: jpeg,
        image_tail: 'https://cdn.example.com/end.png',
        element_list: [{ frontal_image: png, refer_images: [{ image_url: 'https://cdn.example.com/side.png' }] }],
      });
    });

    it('intelligence shots keep the prompt', async () => {
      const { submit } = await run(F, { prompt: 'a chase', multi_shot: true, shot_type: 'intelligence', duration: 12 }, UP.f);
      expect(submit.body).to.deep.equal({ model_name: 'model_f', prompt: 'a chase', multi_shot: true, shot_type: 'intelligence', sound: 'off', mode: 'std', aspect_ratio: '16:9', duration: '12' });
    });

    it('a refusal inside a 200 (code 1301, content safety) → 3002 with the message', async () => {
      up.replyOnce(UP.f, 200, { code: 1301, message: 'prompt flagged', request_id: 'x' });
      const { info, done } = await run(F, { prompt: 'x' }, UP.f);
      expectFailed(done, info, 3002, 'Upstream Service Request Failed', "The provider's content safety refused the request: prompt flagged");
    });

    it('the upstream account is rate limited (code 1303) → 3001', async () => {
      up.replyOnce(UP.f, 429, { code: 1303, message: 'parallel task over resource pack limit', request_id: 'y' });
      const { info, done } = await run(F, { prompt: 'y' }, UP.f);
      expect(done.task_info.error.code).to.equal(3001);
      expect(done.task_info.status).to.equal('failed');
      expect(info.id).to.equal(done.task_info.id);
    });

    it('the failed fixture → 3005 with the status message', async () => {
      const { info, done } = await run(F, { prompt: 'FAILME' }, UP.f);
      expectFailed(done, info, 3005, 'Upstream Service Execution Failed', 'The provider could not complete the task: Failure to pass the risk control system');
    });
  });
});

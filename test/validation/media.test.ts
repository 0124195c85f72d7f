// Media checks (engine/media/checks.ts), the blob store that keeps large media out of the main
// thread's strings (blobs.ts), the worker pool that parses large bodies (pool.ts), and the body
// reader's limits (body.ts) through a real gateway.
import { expect } from 'chai';
import { base64DecodedSize, checkDimensions, checkImage, checkUrl, sniffImage, urlExtension, type MediaRule } from '../../engine/media/checks.ts';
import { isMediaToken, MEDIA_TOKEN_PREFIX, MediaBlobStore, MediaGoneError, mediaBlobs, tokensIn } from '../../engine/media/blobs.ts';
import { configureMedia, mediaOptions, parseMediaBody } from '../../engine/media/pool.ts';
import { resolvePointer, parsePointer } from '../../engine/media/pointers.ts';
import { acquireBodyBuffer, dropBodyBuffers, recycleBodyBuffer, retainedBodyBytes } from '../../engine/media/buffers.ts';
import type { Gateway } from '../../engine/gateway.ts';
import { call } from '../helpers/gateway.ts';
import { b64, dataUri, imageBytes, vendorGateway } from '../vendors/support.ts';

const IMAGE: MediaRule = { at: '/x', kind: 'image', max_bytes: 1000, formats: ['jpeg', 'png', 'bmp', 'webp'] };

describe('media checks', () => {
  it('Base64: standard alphabet, padding only at the end, no impossible lengths', () => {
    expect(base64DecodedSize('')).to.equal(0);
    expect(base64DecodedSize('QQ==')).to.equal(1);
    expect(base64DecodedSize('QUI=')).to.equal(2);
    expect(base64DecodedSize('QUJD')).to.equal(3);
    expect(base64DecodedSize('QUI')).to.equal(2); // unpadded
    expect(base64DecodedSize('Q')).to.equal(undefined); // 4n+1
    expect(base64DecodedSize('QQ=')).to.equal(undefined); // padded but not a multiple of 4
    expect(base64DecodedSize('Q===')).to.equal(undefined);
    expect(base64DecodedSize('QU=J')).to.equal(undefined);
    expect(base64DecodedSize('QU J')).to.equal(undefined);
    expect(base64DecodedSize('QU-_')).to.equal(undefined); // URL-safe alphabet is not accepted
    expect(base64DecodedSize('data:xxx,QUJD', 9)).to.equal(3);
  });

  it('sniffs image formats by their magic bytes', () => {
    for (const k of ['png', 'jpeg', 'bmp', 'webp', 'gif', 'tiff'] as const) expect(sniffImage(imageBytes(k))).to.equal(k);
    expect(sniffImage(imageBytes('noise'))).to.equal(undefined);
    const heic = Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from('ftypheic'), Buffer.alloc(16)]);
    expect(sniffImage(heic)).to.equal('heic');
  });

  it('images: URL, data URI or bare Base64, with the violation each failure names', () => {
    const v = (s: string, rule: MediaRule = IMAGE) => checkImage(s, rule);
    expect(v('https://a.example.com/x.png')).to.deep.equal({ ok: true, shape: 'url' });
    expect(v(b64('png'))).to.include({ ok: true, shape: 'base64', format: 'png', bytes: 64 });
    expect(v(dataUri('webp'))).to.include({ ok: true, shape: 'data_uri', format: 'webp' });
    expect(v(b64('png', 1000)).ok).to.equal(true);
    expect(v(b64('png', 1001))).to.include({ ok: false, violation: 'file_size', bytes: 1001 });
    expect(v(b64('gif'))).to.include({ ok: false, violation: 'file_format' });
    expect(v(dataUri('gif'))).to.include({ ok: false, violation: 'file_format' });
    expect(v('data:application/pdf;base64,QUJD')).to.include({ ok: false, violation: 'file_format' });
    expect(v(b64('noise'))).to.include({ ok: false, violation: 'file_content' });
    expect(v('###')).to.include({ ok: false, violation: 'file_content' });
    expect(v('data:image/png;base64,###')).to.include({ ok: false, violation: 'file_content' });
    expect(v('data:image/png,abc')).to.include({ ok: false, violation: 'malformed' });
    expect(v('')).to.include({ ok: false, violation: 'malformed' });
    expect(v('ftp://a.example.com/x.png')).to.include({ ok: false, violation: 'malformed' });
    expect(v('https://exa mple.com/x')).to.include({ ok: false, violation: 'malformed' });
  });

  it('images: Base64 is rewritten to the upstream form the rule asks for', () => {
    const raw = b64('jpeg');
    expect(checkImage(raw, { ...IMAGE, to: 'data_uri' }).rewrite).to.deep.equal({ prefix: 'data:image/jpeg;base64,', payloadStart: 0 });
    expect(checkImage(`data:image/jpeg;base64,${raw}`, { ...IMAGE, to: 'bare_base64' }).rewrite).to.deep.equal({ prefix: '', payloadStart: 23 });
    expect(checkImage(raw, { ...IMAGE, to: 'bare_base64' }).rewrite).to.equal(undefined);
    expect(checkImage('https://a.example.com/x.png', { ...IMAGE, to: 'data_uri' }).rewrite).to.equal(undefined);
  });

  it('URLs: only a recognisable extension is checked', () => {
    const rule: MediaRule = { at: '/v', kind: 'url', extensions: ['mp4', 'mov'] };
    expect(urlExtension('https://a.example.com/b/c.MP4?x=1#y')).to.equal('mp4');
    expect(urlExtension('https://a.example.com/b.d/c')).to.equal(undefined);
    expect(checkUrl('https://a.example.com/c.mov', rule).ok).to.equal(true);
    expect(checkUrl('https://a.example.com/c', rule).ok).to.equal(true);
    expect(checkUrl('https://a.example.com/c.final2', rule).ok).to.equal(true);
    expect(checkUrl('https://a.example.com/c.avi', rule)).to.include({ ok: false, violation: 'file_format' });
    expect(checkUrl('a.example.com/c.mp4', rule)).to.include({ ok: false, violation: 'malformed' });
  });

  it('dimensions: pixel count and aspect ratio bounds, inclusive', () => {
    const rule: MediaRule = { at: '/size', kind: 'dimensions', min_pixels: 768 * 768, max_pixels: 1440 * 1440, min_ratio: 0.25, max_ratio: 4 };
    const v = (s: string) => checkDimensions(s, rule);
    for (const s of ['768*768', '1440*1440', '512*2048', '2048*512', '384*1536']) expect(v(s).ok, s).to.equal(true);
    expect(v('767*769')).to.include({ ok: false, violation: 'out_of_range' });
    expect(v('767*769').detail).to.equal('has 589823 pixels; allowed 768*768 (589824) to 1440*1440 (2073600)');
    expect(v('1441*1440')).to.include({ ok: false, violation: 'out_of_range' });
    expect(v('511*2048').detail).to.equal('has the aspect ratio 511:2048; allowed 1:4 to 4:1');
    expect(v('64*4096').detail).to.match(/pixels.*, and has the aspect ratio/);
    for (const s of ['1280x1280', '*5', '5*', '1.5*2', '-1*5', '0*900']) expect(v(s), s).to.include({ ok: false, violation: 'malformed' });
    expect(checkDimensions('1024x768', { ...rule, separator: 'x' }).ok).to.equal(true);
  });

  it('pointers with * reach every array item, skipping absent and null values', () => {
    const body = { a: [{ b: 1 }, { b: null }, { c: 2 }, { b: 3 }], x: null };
    expect(resolvePointer(body, parsePointer('/a/*/b')).map((h) => [h.pointer, h.value])).to.deep.equal([['/a/0/b', 1], ['/a/3/b', 3]]);
    expect(resolvePointer(body, parsePointer('/x'))).to.deep.equal([]);
    const hit = resolvePointer(body, parsePointer('/a/3/b'))[0]!;
    hit.set(4);
    expect(body.a[3]).to.deep.equal({ b: 4 });
  });
});

describe('media blobs', () => {
  const token = (c: string) => `${MEDIA_TOKEN_PREFIX}${c.repeat(64)}`;

  it('splices blob bytes into the serialised JSON as buffers', () => {
    const store = new MediaBlobStore();
    store.put(token('a'), Buffer.from('data:image/png;base64,QUJD'), { ok: true });
    const raw = store.encodeJson({ x: [{ u: token('a') }, 'keep'], y: token('a') })!;
    const text = Buffer.concat(raw.chunks).toString();
    expect(raw.length).to.equal(Buffer.byteLength(text));
    expect(JSON.parse(text)).to.deep.equal({ x: [{ u: 'data:image/png;base64,QUJD' }, 'keep'], y: 'data:image/png;base64,QUJD' });
    expect(store.encodeJson({ plain: 'value' })).to.equal(undefined);
  });

  it('counts references; a released or expired blob is gone', () => {
    const store = new MediaBlobStore(1000);
    store.put(token('b'), Buffer.from('QUJD'), { ok: true }, 0);
    store.put(token('b'), Buffer.from('QUJD'), { ok: true }, 0);
    expect([store.size, store.bytesHeld]).to.deep.equal([1, 4]);
    store.release([token('b')]);
    expect(store.size).to.equal(1);
    store.release([token('b')]);
    expect([store.size, store.bytesHeld]).to.deep.equal([0, 0]);
    expect(() => store.encodeJson({ u: token('b') })).to.throw(MediaGoneError);
    store.put(token('c'), Buffer.from('x'), { ok: true }, 0);
    store.sweep(500);
    expect(store.size).to.equal(1);
    store.sweep(1001);
    expect(store.size).to.equal(0);
  });

  it('finds tokens in a request', () => {
    expect(tokensIn({ a: [token('d'), 'x', { b: token('e') }] })).to.deep.equal([token('d'), token('e')]);
    expect(isMediaToken(`${MEDIA_TOKEN_PREFIX}zz`)).to.equal(false);
  });
});

describe('body buffers', () => {
  it('large body buffers are reused: a recycled buffer serves the next body of a similar size', () => {
    dropBodyBuffers();
    const a = acquireBodyBuffer(3 * 1024 * 1024 + 5);
    expect(a.byteLength).to.equal(4 * 1024 * 1024);
    const ab = a.buffer as ArrayBuffer;
    recycleBodyBuffer(ab);
    expect(retainedBodyBytes()).to.be.at.least(4 * 1024 * 1024);
    expect(acquireBodyBuffer(3 * 1024 * 1024).buffer).to.equal(ab);
    expect(acquireBodyBuffer(3 * 1024 * 1024).buffer).to.not.equal(ab); // taken: a new one
    recycleBodyBuffer(new ArrayBuffer(100 * 1024 * 1024));
    expect(acquireBodyBuffer(1024 * 1024).byteLength).to.equal(1024 * 1024); // a far larger one is not spent on a small body
    dropBodyBuffers();
    expect(retainedBodyBytes()).to.equal(0);
  });
});

describe('media pool', function () {
  this.timeout(20_000);
  const rules: MediaRule[] = [{ at: '/img', kind: 'image', max_bytes: 4 * 1024 * 1024, to: 'data_uri' }, { at: '/list/*', kind: 'image', max_bytes: 4 * 1024 * 1024 }];
  const enc = (v: unknown) => {
    const b = Buffer.from(JSON.stringify(v));
    return [new Uint8Array(b), b.length] as const;
  };

  it('parses a large body in a worker: large media become content-addressed tokens with verdicts, small values stay', async () => {
    const big = b64('png', 1024 * 1024);
    const [bytes, length] = enc({ prompt: 'p', img: big, list: ['https://a.example.com/x.png', b64('jpeg', 300 * 1024), 'short', `${b64('png', 200 * 1024)}!`] });
    const parsed = await parseMediaBody(bytes, length, rules);
    const body = parsed.body as { prompt: string; img: string; list: string[] };
    expect(body.prompt).to.equal('p');
    expect(isMediaToken(body.img)).to.equal(true);
    expect(body.list[0]).to.equal('https://a.example.com/x.png');
    expect(isMediaToken(body.list[1])).to.equal(true);
    expect(body.list[2]).to.equal('short');
    expect(isMediaToken(body.list[3])).to.equal(true);
    expect(parsed.tokens).to.have.length(3);
    expect(mediaBlobs.verdict(body.img)).to.include({ ok: true, format: 'png', shape: 'base64' });
    expect(Buffer.from(mediaBlobs.bytes(body.img)!).toString('latin1')).to.equal(`data:image/png;base64,${big}`);
    expect(mediaBlobs.verdict(body.list[3]!)).to.include({ ok: false, violation: 'file_content' });
    expect(mediaBlobs.bytes(body.list[3]!)).to.equal(undefined);
    // The same upload yields the same tokens (idempotency fingerprints stay stable).
    const again = await parseMediaBody(...enc({ prompt: 'p', img: big, list: [] }), rules);
    expect((again.body as { img: string }).img).to.equal(body.img);
    mediaBlobs.release([...parsed.tokens, ...again.tokens]);
    expect(mediaBlobs.verdict(body.img)).to.equal(undefined);
  });

  it('malformed JSON is reported from the worker', async () => {
    const text = `{"img": "${'A'.repeat(400 * 1024)}"`;
    const b = Buffer.from(text);
    let caught: unknown;
    await parseMediaBody(new Uint8Array(b), b.length, rules).catch((err) => (caught = err));
    expect((caught as Error).name).to.equal('JsonBodyError');
    expect((caught as { tooDeep: boolean }).tooDeep).to.equal(false);
  });

  it('inline mode parses on the main thread and leaves the media in place', async () => {
    const before = mediaOptions().mode;
    configureMedia({ mode: 'inline' });
    try {
      const big = b64('png', 512 * 1024);
      const parsed = await parseMediaBody(...enc({ img: big }), rules);
      expect(parsed).to.deep.equal({ body: { img: big }, tokens: [] });
    } finally {
      configureMedia({ mode: before });
    }
  });
});

describe('media routes read their body after auth, with their own limit', function () {
  this.timeout(20_000);
  let ctx: { gw: Gateway; key: string };
  const A = '/vendors/provider_a/v1/model_a/generation';
  const G = '/vendors/provider_d/v1/model_g/generation';
  before(async () => {
    ctx = await vendorGateway();
  });
  after(async () => {
    await ctx.gw.close();
  });

  it('no key → 401 / 1001 before the body is read', async () => {
    const r = await call(ctx.gw.url, 'POST', A, { body: { prompt: 'x' } });
    expect([r.status, r.body.error_code]).to.deep.equal([401, 1001]);
  });

  it('a body over the route limit → 413 (model G: 16 MB)', async () => {
    const r = await call(ctx.gw.url, 'POST', G, { key: ctx.key, body: { first_frame: b64('png', 13 * 1024 * 1024) } });
    expect(r.status).to.equal(413);
    expect(r.body.error_code).to.equal(2101);
  });

  it('a non-JSON content type → 415', async () => {
    const r = await call(ctx.gw.url, 'POST', A, { key: ctx.key, raw: 'prompt=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect([r.status, r.body.error_code]).to.deep.equal([415, 2001]);
  });

  it('no body at all → 400 in the route\'s shape', async () => {
    const r = await call(ctx.gw.url, 'POST', A, { key: ctx.key });
    expect(r.status).to.equal(400);
    expect(r.body.task_info.error.code).to.equal(2001);
  });

  it('a refused large upload releases its blobs', async () => {
    const r = await call(ctx.gw.url, 'POST', A, { key: ctx.key, body: { first_frame: b64('png', 1024 * 1024), reference_images: [b64('png', 1024 * 1024)] } });
    expect(r.status).to.equal(400);
    expect(r.body.task_info.error.code).to.equal(2004);
    expect(mediaBlobs.size).to.equal(0);
  });

  it('an idempotent replay of a large upload creates one task and keeps no blobs', async () => {
    const body = { prompt: 'same', first_frame: b64('jpeg', 1024 * 1024) };
    const headers = { 'idempotency-key': `media-${Date.now()}` };
    const [one, two] = [await call(ctx.gw.url, 'POST', A, { key: ctx.key, body, headers }), await call(ctx.gw.url, 'POST', A, { key: ctx.key, body, headers })];
    expect(one.status).to.equal(200);
    expect(two.status).to.equal(200);
    expect(two.body.task_info.id).to.equal(one.body.task_info.id);
    for (let i = 0; i < 100 && mediaBlobs.size > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(mediaBlobs.size).to.equal(0);
  });
});

// The result download's SSRF rules (engine/results/download.ts), with no allow-list: every
// address form the issue names is refused before a connection is made, a name that resolves to
// loopback is refused at connect time, and a redirect is checked again at each hop. The
// gateway-level mapping of these refusals (4012, unbilled) is in result-store.test.ts.
import { expect } from 'chai';
import { Downloader, CopyFailure } from '../../engine/results/download.ts';
import { FileHost } from './support.ts';

const ACCEPT = new Set(['image/png']);

async function refusal(d: Downloader, url: string): Promise<CopyFailure> {
  try {
    const got = await d.fetch({ url, accept: ACCEPT, signal: AbortSignal.timeout(5000) });
    got.body.destroy();
  } catch (err) {
    expect(err).to.be.instanceOf(CopyFailure);
    return err as CopyFailure;
  }
  throw new Error(`${url} was not refused`);
}

describe('result downloads: SSRF rules', function () {
  this.timeout(20_000);
  let files: FileHost;
  before(async () => {
    files = await new FileHost().start();
    files.put('/ok.png', { bytes: Buffer.from('png'), type: 'image/png' });
  });
  after(() => files.close());

  it('refuses loopback, metadata, IPv4-mapped and private addresses, and names that resolve to them', async () => {
    const d = new Downloader({ allowPrivateCidrs: [], trustedOrigins: [], connectTimeoutMs: 2000, idleTimeoutMs: 2000, maxBytes: 1000 });
    try {
      for (const [url, words] of [
        [`http://127.0.0.1:${files.port}/ok.png`, 'loopback'],
        ['http://169.254.169.254/latest/meta-data/', 'link-local'],
        [`http://[::ffff:127.0.0.1]:${files.port}/ok.png`, 'loopback'],
        [`http://[::1]:${files.port}/ok.png`, 'loopback'],
        ['http://10.0.0.7/x.png', 'private'],
        [`http://localhost:${files.port}/ok.png`, 'loopback'],
      ]) {
        const f = await refusal(d, url!);
        expect(f.reason, url).to.equal('refused_address');
        expect(f.permanent).to.equal(true);
        expect(f.message, url).to.contain(words);
      }
      expect(files.hits.size).to.equal(0); // nothing reached the host
    } finally {
      await d.close();
    }
  });

  it('checks every redirect hop, and follows an allowed one', async () => {
    const d = new Downloader({ allowPrivateCidrs: ['127.0.0.1/32'], trustedOrigins: [], connectTimeoutMs: 2000, idleTimeoutMs: 2000, maxBytes: 1000 });
    try {
      const inside = files.put('/to-metadata.png', { bytes: Buffer.alloc(0), type: 'image/png', redirect: 'http://169.254.169.254/latest/meta-data/' });
      expect((await refusal(d, inside)).message).to.contain('link-local');
      const mapped = files.put('/to-mapped.png', { bytes: Buffer.alloc(0), type: 'image/png', redirect: `http://[::ffff:127.0.0.2]:${files.port}/ok.png` });
      expect((await refusal(d, mapped)).message).to.contain('loopback');
      const fine = files.put('/to-ok.png', { bytes: Buffer.alloc(0), type: 'image/png', redirect: '/ok.png' });
      const got = await d.fetch({ url: fine, accept: ACCEPT, signal: AbortSignal.timeout(5000) });
      const chunks: Buffer[] = [];
      for await (const c of got.body) chunks.push(c as Buffer);
      expect(Buffer.concat(chunks).toString()).to.equal('png');
      // A redirect loop ends.
      files.put('/loop.png', { bytes: Buffer.alloc(0), type: 'image/png', redirect: '/loop.png' });
      expect((await refusal(d, files.url('/loop.png'))).message).to.contain('redirects');
    } finally {
      await d.close();
    }
  });
});

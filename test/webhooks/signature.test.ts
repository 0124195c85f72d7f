import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { signPayload, verifyWebhook, WebhookVerificationError } from '../../engine/webhooks/signature.ts';

interface SigningVector { name: string; secret: string; delivery_id: string; timestamp: number; body: string; expected_signature: string }
interface VerificationCase { name: string; secret: string; body: string; headers: Record<string, string>; now_ms: number; expect: string }
const vectors = JSON.parse(readFileSync(new URL('./signature-vectors.json', import.meta.url), 'utf8')) as {
  signing: SigningVector[];
  verification: VerificationCase[];
};

function reasonOf(fn: () => unknown): string {
  try {
    fn();
    return 'ok';
  } catch (err) {
    expect(err).to.be.instanceOf(WebhookVerificationError);
    return (err as WebhookVerificationError).reason;
  }
}

describe('webhook signatures', () => {
  describe('fixed vectors (signature-vectors.json)', () => {
    it('has vectors to check', () => {
      expect(vectors.signing.length).to.be.at.least(4);
      expect(vectors.verification.length).to.be.at.least(15);
    });

    for (const v of vectors.signing) {
      it(`signs: ${v.name}`, () => {
        expect(signPayload(v.secret, v.delivery_id, v.timestamp, v.body)).to.equal(v.expected_signature);
        expect(signPayload(v.secret, v.delivery_id, v.timestamp, Buffer.from(v.body, 'utf8'))).to.equal(v.expected_signature);
      });

      it(`matches the spec formula computed here: ${v.name}`, () => {
        const mac = createHmac('sha256', Buffer.from(v.secret, 'utf8'))
          .update(Buffer.from(`${v.delivery_id}.${v.timestamp}.${v.body}`, 'utf8'))
          .digest('hex');
        expect(`v1=${mac}`).to.equal(v.expected_signature);
      });
    }

    for (const c of vectors.verification) {
      it(`verifies: ${c.name} → ${c.expect}`, () => {
        const outcome = reasonOf(() => verifyWebhook(Buffer.from(c.body, 'utf8'), c.headers, c.secret, { now: () => c.now_ms }));
        expect(outcome).to.equal(c.expect);
      });
    }
  });

  describe('verifyWebhook', () => {
    const v = vectors.signing[0]!;
    const headers = {
      'x-service-webhook-id': v.delivery_id,
      'x-service-webhook-timestamp': String(v.timestamp),
      'x-service-webhook-signature': v.expected_signature,
    };
    const now = () => v.timestamp * 1000;

    it('returns the parsed event', () => {
      const event = verifyWebhook(v.body, headers, v.secret, { now }) as { id: string; type: string };
      expect(event.type).to.equal('task.succeeded');
      expect(event.id).to.equal('evt_7QhX2bLk9PzR4mVt1YwN8cDs');
    });

    it('works on raw bytes: a re-serialized body does not verify', () => {
      const raw = vectors.signing[1]!;
      const h = { ...headers, 'x-service-webhook-timestamp': String(raw.timestamp), 'x-service-webhook-signature': raw.expected_signature };
      expect(reasonOf(() => verifyWebhook(Buffer.from(raw.body, 'utf8'), h, raw.secret, { now }))).to.equal('ok');
      const reserialized = JSON.stringify(JSON.parse(raw.body));
      expect(reserialized).to.not.equal(raw.body);
      expect(reasonOf(() => verifyWebhook(reserialized, h, raw.secret, { now }))).to.equal('bad_signature');
    });

    it('honours a custom tolerance', () => {
      const later = () => (v.timestamp + 61) * 1000;
      expect(reasonOf(() => verifyWebhook(v.body, headers, v.secret, { now: later }))).to.equal('ok');
      expect(reasonOf(() => verifyWebhook(v.body, headers, v.secret, { now: later, toleranceSeconds: 60 }))).to.equal('timestamp_skew');
    });

    it('accepts headers given as arrays (node IncomingHttpHeaders style)', () => {
      const h = { ...headers, 'x-service-webhook-signature': [v.expected_signature] };
      expect(reasonOf(() => verifyWebhook(v.body, h, v.secret, { now }))).to.equal('ok');
    });

    it('rejects a non-numeric timestamp', () => {
      const h = { ...headers, 'x-service-webhook-timestamp': '17672256OO' };
      expect(reasonOf(() => verifyWebhook(v.body, h, v.secret, { now }))).to.equal('timestamp_skew');
    });

    it('rejects non-hex and over-long signatures without throwing anything else', () => {
      for (const bad of ['v1=' + 'z'.repeat(64), v.expected_signature + '00', 'v1=', 'v1=' + v.expected_signature.slice(3).toUpperCase() + 'g']) {
        expect(reasonOf(() => verifyWebhook(v.body, { ...headers, 'x-service-webhook-signature': bad }, v.secret, { now }))).to.equal('bad_signature');
      }
    });

    it('accepts an upper-case hex digest (hex is case-insensitive)', () => {
      const upper = 'v1=' + v.expected_signature.slice(3).toUpperCase();
      expect(reasonOf(() => verifyWebhook(v.body, { ...headers, 'x-service-webhook-signature': upper }, v.secret, { now }))).to.equal('ok');
    });

    it('uses the real clock by default', () => {
      const ts = Math.floor(Date.now() / 1000);
      const h = { ...headers, 'x-service-webhook-timestamp': String(ts), 'x-service-webhook-signature': signPayload(v.secret, v.delivery_id, ts, v.body) };
      expect(reasonOf(() => verifyWebhook(v.body, h, v.secret))).to.equal('ok');
      const old = ts - 301;
      const h2 = { ...headers, 'x-service-webhook-timestamp': String(old), 'x-service-webhook-signature': signPayload(v.secret, v.delivery_id, old, v.body) };
      expect(reasonOf(() => verifyWebhook(v.body, h2, v.secret))).to.equal('timestamp_skew');
    });
  });
});

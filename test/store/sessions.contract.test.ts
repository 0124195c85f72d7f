// The console session store port (engine/tenants/store.ts SessionStore) on every backend.
import { expect } from 'chai';
import { MemorySessionStore } from '../../engine/store/memory/sessions.ts';
import { RedisSessionStore } from '../../engine/store/redis/sessions.ts';
import type { SessionRecord, SessionStore } from '../../engine/tenants/store.ts';
import { forEachBackend, keysUnder } from './support.ts';

const HOUR = 3_600_000;

function session(hash: string, over: Partial<SessionRecord> = {}): SessionRecord {
  const now = Date.now();
  return { hash, kind: 'tenant', owner: 'key:key_1', tenant_id: 't1', key_id: 'key_1', created_at: now, seen_at: now, expires_at: now + HOUR, ...over };
}

forEachBackend('SessionStore contract', (env) => {
  let a: SessionStore;
  let b: SessionStore;
  let prefix: string;
  beforeEach(() => {
    ({ a, b, prefix } = env.pair<SessionStore>(() => new MemorySessionStore(), (client, p) => new RedisSessionStore({ client, prefix: p, maxLifetimeMs: 12 * HOUR })));
  });

  it('stores a session under its hash and reads it back from another connection', async () => {
    const s = session('h1');
    await a.create(s, 5);
    expect(await b.get('h1')).to.deep.equal(s);
    expect(await b.get('h2')).to.equal(undefined);
  });

  it('forgets an expired session', async () => {
    await a.create(session('h1', { expires_at: Date.now() + 50 }), 5);
    await new Promise((r) => setTimeout(r, 80));
    expect(await b.get('h1')).to.equal(undefined);
  });

  it('slides the expiry with touch', async () => {
    const s = session('h1', { expires_at: Date.now() + 100 });
    await a.create(s, 5);
    const later = Date.now() + HOUR;
    await b.touch('h1', s.created_at + 1, later);
    await new Promise((r) => setTimeout(r, 150));
    expect(await a.get('h1')).to.include({ seen_at: s.created_at + 1, expires_at: later });
    await b.touch('gone', 1, later); // a no-op
    expect(await a.get('gone')).to.equal(undefined);
  });

  it('caps the sessions of one owner, dropping the oldest, without touching other owners', async () => {
    const t0 = Date.now();
    for (let i = 0; i < 4; i++) await a.create(session(`h${i}`, { created_at: t0 + i }), 3);
    await a.create(session('x', { owner: 'key:key_2', created_at: t0 }), 3);
    expect(await b.get('h0')).to.equal(undefined);
    for (const h of ['h1', 'h2', 'h3', 'x']) expect(await b.get(h), h).not.to.equal(undefined);
  });

  it('drops the oldest by arrival when sessions are created in the same millisecond', async () => {
    // Hashes are random, so equal times must not fall back to the hashes' order.
    const t0 = Date.now();
    for (const h of ['m', 'z', 'a', 'k']) await a.create(session(h, { created_at: t0 }), 3);
    expect(await b.get('m')).to.equal(undefined);
    for (const h of ['z', 'a', 'k']) expect(await b.get(h), h).not.to.equal(undefined);
  });

  it('deletes one session, and every session of an owner', async () => {
    await a.create(session('h1'), 5);
    await a.create(session('h2'), 5);
    await a.create(session('o', { kind: 'operator', owner: 'operator' }), 5);
    await b.delete({ hash: 'h1', owner: 'key:key_1' });
    expect(await a.get('h1')).to.equal(undefined);
    expect(await b.deleteOwner('key:key_1')).to.equal(1);
    expect(await a.get('h2')).to.equal(undefined);
    expect(await a.get('o')).to.include({ kind: 'operator' });
  });

  if (env.isRedis) {
    it('keeps each session in its own slot with a TTL, and the owner index bounded in time', async () => {
      const s = session('h1');
      await a.create(s, 5);
      expect((await keysUnder(env.a, prefix)).sort()).to.deep.equal([`${prefix}{sess-owner:key:key_1}`, `${prefix}{sess:h1}`]);
      expect(await env.a.pttl(`${prefix}{sess:h1}`)).to.be.within(HOUR - 5000, HOUR);
      expect(await env.a.pttl(`${prefix}{sess-owner:key:key_1}`)).to.be.within(12 * HOUR - 5000, 12 * HOUR);
    });
  }
});

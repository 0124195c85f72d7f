import { expect } from 'chai';
import type { LookupAddress } from 'node:dns';
import { AddressPolicy, destinationRefusal, guardedLookup, type HostResolver } from '../../engine/webhooks/ssrf.ts';
import { resolveWebhookConfig } from '../../engine/webhooks/config.ts';

const none = AddressPolicy.fromCidrs([]);

describe('webhooks SSRF guard', () => {
  describe('AddressPolicy', () => {
    const refused: Array<[string, string]> = [
      ['10.1.2.3', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.254', 'private'],
      ['192.168.1.1', 'private'],
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['::1', 'loopback'],
      ['169.254.169.254', 'link-local'],
      ['fe80::1', 'link-local'],
      ['fe80::1%eth0', 'link-local'],
      ['fd12:3456:789a::1', 'unique-local'],
      ['fc00::5', 'unique-local'],
      ['100.64.0.1', 'carrier-grade NAT'],
      ['100.127.255.254', 'carrier-grade NAT'],
      ['224.0.0.251', 'multicast'],
      ['ff02::1', 'multicast'],
      ['0.0.0.0', 'unspecified'],
      ['::', 'unspecified'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:10.0.0.7', 'private'],
      ['::ffff:a9fe:a9fe', 'link-local'],
      ['255.255.255.255', 'reserved'],
    ];
    for (const [address, label] of refused) {
      it(`refuses ${address} (${label})`, () => {
        expect(none.refusal(address)).to.equal(`${address} is a ${label} address`);
      });
    }

    // IPv6 addresses carrying an IPv4 address are judged by it too, in every spelling.
    const embedded: Array<[string, string, string]> = [
      ['::ffff:7f00:1', 'loopback', ''],
      ['0:0:0:0:0:ffff:7f00:1', 'loopback', ''],
      ['::ffff:0:7f00:1', 'loopback', ' (IPv4-translated of 127.0.0.1)'],
      ['0::ffff:0:127.0.0.1', 'loopback', ' (IPv4-translated of 127.0.0.1)'],
      ['::7f00:1', 'reserved', ''],
      ['64:ff9b::7f00:1', 'loopback', ' (NAT64 of 127.0.0.1)'],
      ['64:ff9b::10.1.2.3', 'private', ' (NAT64 of 10.1.2.3)'],
      ['0064:ff9b:0000:0000:0000:0000:a9fe:a9fe', 'link-local', ' (NAT64 of 169.254.169.254)'],
      ['64:ff9b:1::7f00:1', 'loopback', ' (NAT64 local-use of 127.0.0.1)'],
      ['64:ff9b:1:a00:0:100::', 'private', ' (NAT64 local-use of 10.0.0.1)'],
      ['2002:7f00:1::', 'loopback', ' (6to4 of 127.0.0.1)'],
      ['2002:c0a8:101:1::1', 'private', ' (6to4 of 192.168.1.1)'],
      // Teredo: client 127.0.0.1 is stored inverted (80ff:fffe).
      ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback', ' (Teredo of 127.0.0.1)'],
    ];
    for (const [address, label, form] of embedded) {
      it(`refuses ${address} (${label}${form})`, () => {
        expect(none.refusal(address)).to.equal(`${address} is a ${label} address${form}`);
      });
    }
    it('an allow-listed IPv4 address is allowed in its IPv6 forms too', () => {
      const p = AddressPolicy.fromCidrs(['127.0.0.1/32']);
      for (const a of ['::ffff:0:7f00:1', '64:ff9b::7f00:1', '2002:7f00:1::']) expect(p.refusal(a), a).to.equal(null);
    });

    for (const address of ['64:ff9b::808:808', '64:ff9b:1::808:808', '2002:808:808::1', '2001:0:4136:e378:8000:63bf:f7f7:f7f7', '93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      it(`allows public ${address}`, () => {
        expect(none.refusal(address)).to.equal(null);
      });
    }

    it('lets the operator allow-list CIDRs (including for IPv4-mapped forms)', () => {
      const p = AddressPolicy.fromCidrs(['127.0.0.1/32', '10.20.0.0/16', 'fd00::/8']);
      expect(p.refusal('127.0.0.1')).to.equal(null);
      expect(p.refusal('::ffff:127.0.0.1')).to.equal(null);
      expect(p.refusal('127.0.0.2')).to.match(/loopback/);
      expect(p.refusal('10.20.9.9')).to.equal(null);
      expect(p.refusal('10.21.0.1')).to.match(/private/);
      expect(p.refusal('fd00::1')).to.equal(null);
      expect(p.refusal('::1')).to.match(/loopback/);
    });

    it('treats a bare address as a single host', () => {
      const p = AddressPolicy.fromCidrs(['192.168.1.10']);
      expect(p.refusal('192.168.1.10')).to.equal(null);
      expect(p.refusal('192.168.1.11')).to.match(/private/);
    });

    it('rejects malformed CIDRs, also through the config', () => {
      for (const bad of ['10.0.0.0/33', 'nonsense', '10.0.0.0/x', '::1/129']) {
        expect(() => AddressPolicy.fromCidrs([bad]), bad).to.throw(/not a CIDR/);
      }
      expect(() => resolveWebhookConfig({ allow_private_cidrs: ['10.0.0.0/40'] })).to.throw(/allow_private_cidrs/);
    });
  });

  describe('save-time destination check', () => {
    const fakeDns: Record<string, string[]> = {
      'hooks.example.com': ['93.184.216.34', '2606:2800:220:1::1'],
      'internal.example.com': ['10.1.2.3'],
      'mixed.example.com': ['93.184.216.34', '192.168.7.7'],
      'metadata.example.com': ['169.254.169.254'],
    };
    const resolve: HostResolver = async (host) => {
      const list = fakeDns[host];
      if (!list) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };
    const check = (url: string, policy = none) => destinationRefusal(new URL(url), policy, resolve);

    it('accepts a host whose addresses are all public', async () => {
      expect(await check('https://hooks.example.com/x')).to.equal(null);
    });
    it('refuses a host resolving to a private address', async () => {
      expect(await check('https://internal.example.com/x')).to.equal('internal.example.com resolves to 10.1.2.3, which is a private address');
    });
    it('refuses when any one of several addresses is private', async () => {
      expect(await check('https://mixed.example.com/x')).to.match(/192\.168\.7\.7, which is a private address/);
    });
    it('refuses literal private IPs, IPv6 in brackets and IPv4-mapped forms', async () => {
      expect(await check('https://127.0.0.1:8443/x')).to.match(/loopback/);
      expect(await check('https://[::1]/x')).to.match(/loopback/);
      expect(await check('https://[::ffff:169.254.169.254]/x')).to.match(/link-local/);
      expect(await check('https://0x7f.1/x')).to.match(/127\.0\.0\.1 is a loopback/); // WHATWG URL normalizes it
    });
    it('refuses a host that does not resolve: every attempt to it would fail', async () => {
      expect(await check('https://nowhere.example.com/x')).to.equal('nowhere.example.com does not resolve (ENOTFOUND)');
      const flaky: HostResolver = async () => {
        throw Object.assign(new Error('try again'), { code: 'EAI_AGAIN' });
      };
      expect(await destinationRefusal(new URL('https://hooks.example.com/x'), none, flaky)).to.match(/could not be resolved right now \(EAI_AGAIN\); try again/);
      expect(await destinationRefusal(new URL('https://hooks.example.com/x'), none, async () => [])).to.equal('hooks.example.com does not resolve to any address');
    });
    it('refuses .invalid names without asking DNS (RFC 6761)', async () => {
      const asked: string[] = [];
      const spy: HostResolver = async (host) => {
        asked.push(host);
        return [{ address: '93.184.216.34', family: 4 }];
      };
      for (const url of ['https://host.invalid/x', 'https://HOST.INVALID./x', 'https://invalid/x']) {
        expect(await destinationRefusal(new URL(url), none, spy), url).to.match(/does not resolve \(\.invalid names never do\)$/);
      }
      expect(asked).to.deep.equal([]);
    });
    it('uses the system resolver by default: localhost is refused, then allowed with 127.0.0.1/32', async () => {
      expect(await destinationRefusal(new URL('https://localhost/x'), none)).to.match(/127\.0\.0\.1, which is a loopback address/);
      expect(await destinationRefusal(new URL('https://localhost/x'), AddressPolicy.fromCidrs(['127.0.0.1/32']))).to.equal(null);
    });
    it('treats localhost., LOCALHOST and names under localhost as localhost (RFC 6761), refused or allowed alike', async () => {
      for (const url of ['https://localhost./x', 'https://LOCALHOST/x', 'https://api.localhost/x', 'https://api.localhost./x']) {
        expect(await destinationRefusal(new URL(url), none), url).to.match(/resolves to 127\.0\.0\.1, which is a loopback address/);
        expect(await destinationRefusal(new URL(url), AddressPolicy.fromCidrs(['127.0.0.1/32'])), url).to.equal(null);
      }
    });
  });

  describe('connect-time lookup', () => {
    // A stand-in for dns.lookup that answers like a rebinding attacker's name server.
    const answering = (addresses: string[]) =>
      ((_host: string, _opts: unknown, cb: (err: Error | null, a: LookupAddress[]) => void) =>
        cb(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })))) as never;
    const run = (lookup: ReturnType<typeof guardedLookup>, all: boolean) =>
      new Promise<{ err: NodeJS.ErrnoException | null; result: unknown }>((resolve) =>
        lookup('rebind.example.com', { all }, (err, address, family) => resolve({ err, result: all ? address : [address, family] })),
      );

    it('refuses when every address is disallowed', async () => {
      const { err } = await run(guardedLookup(none, answering(['10.0.0.5'])), false);
      expect(err?.code).to.equal('EDESTREFUSED');
      expect(err?.message).to.match(/10\.0\.0\.5 is a private address/);
    });
    it('connects only to the allowed addresses when some are disallowed', async () => {
      const lookup = guardedLookup(none, answering(['127.0.0.1', '93.184.216.34']));
      expect((await run(lookup, true)).result).to.deep.equal([{ address: '93.184.216.34', family: 4 }]);
      expect((await run(lookup, false)).result).to.deep.equal(['93.184.216.34', 4]);
    });
    it('looks localhost. up as localhost, as the save-time check does', async () => {
      const asked: string[] = [];
      const base = ((host: string, _opts: unknown, cb: (err: Error | null, a: LookupAddress[]) => void) => {
        asked.push(host);
        cb(null, [{ address: '127.0.0.1', family: 4 }]);
      }) as never;
      const lookup = guardedLookup(AddressPolicy.fromCidrs(['127.0.0.1/32']), base);
      const got = await new Promise<unknown>((resolve) => lookup('localhost.', { all: false }, (_e, address) => resolve(address)));
      expect([asked, got]).to.deep.equal([['localhost'], '127.0.0.1']);
    });
    it('lets allow-listed addresses through', async () => {
      const { err, result } = await run(guardedLookup(AddressPolicy.fromCidrs(['10.0.0.0/24']), answering(['10.0.0.5'])), false);
      expect(err).to.equal(null);
      expect(result).to.deep.equal(['10.0.0.5', 4]);
    });
  });
});

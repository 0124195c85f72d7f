// SSRF guard: webhook destinations must be public addresses unless the operator allow-lists
// them (`webhooks.allow_private_cidrs`). Checked twice:
//  - when an endpoint is saved: the host must resolve, and every address it resolves to (or
//    the literal IP) must be allowed, so a user learns at once that the URL will not be called;
//  - at connect time, on every attempt, through `guardedLookup` (the undici Agent's
//    `connect.lookup`): the socket only ever connects to an allowed address, so DNS rebinding
//    (public at save, 10.x at send) cannot reach inside. There we drop refused addresses and
//    fail only when none is left; IP-literal URLs skip DNS and are checked by the sender.
// IPv6 addresses that carry an IPv4 address (IPv4-mapped and SIIT-translated, IPv4-compatible,
// NAT64 well-known and local-use, 6to4, Teredo's client) are judged by that IPv4 address too: a
// translator or relay delivers to it, so `[64:ff9b::7f00:1]` is loopback. Such an address whose
// IPv4 is public stays allowed (IPv6-only hosts behind DNS64 must still reach public receivers).
// The decision is one function (`AddressPolicy.refusal`), for any outbound fetch of a URL a
// client or provider supplied, not only webhooks.
import { BlockList, isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup as dnsLookupAsync } from 'node:dns/promises';

type Family = 'ipv4' | 'ipv6';

/** Refused ranges, by the name used in error messages. BlockList matches IPv4-mapped IPv6
 *  addresses (::ffff:10.0.0.1) against the IPv4 rules, which covers "IPv4-mapped private". */
const REFUSED: ReadonlyArray<[label: string, cidrs: ReadonlyArray<[string, number, Family]>]> = [
  ['unspecified', [['0.0.0.0', 8, 'ipv4'], ['::', 128, 'ipv6']]],
  ['loopback', [['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']]],
  ['private', [['10.0.0.0', 8, 'ipv4'], ['172.16.0.0', 12, 'ipv4'], ['192.168.0.0', 16, 'ipv4']]],
  ['link-local', [['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']]],
  ['unique-local', [['fc00::', 7, 'ipv6'], ['fec0::', 10, 'ipv6']]],
  ['carrier-grade NAT', [['100.64.0.0', 10, 'ipv4']]],
  ['multicast', [['224.0.0.0', 4, 'ipv4'], ['ff00::', 8, 'ipv6']]],
  ['reserved', [['240.0.0.0', 4, 'ipv4'], ['192.0.0.0', 24, 'ipv4'], ['198.18.0.0', 15, 'ipv4'], ['::', 96, 'ipv6']]],
];

const REFUSED_LISTS: ReadonlyArray<[string, BlockList]> = REFUSED.map(([label, cidrs]) => {
  const list = new BlockList();
  for (const [net, prefix, family] of cidrs) list.addSubnet(net, prefix, family);
  return [label, list];
});

/** Decides whether one IP address may be connected to. */
export class AddressPolicy {
  private readonly allowed: BlockList;
  private constructor(allowed: BlockList) {
    this.allowed = allowed;
  }

  /** `cidrs` like `10.1.0.0/16`, `127.0.0.1/32`, `::1/128`; a bare address means a single host. */
  static fromCidrs(cidrs: readonly string[]): AddressPolicy {
    const allowed = new BlockList();
    for (const cidr of cidrs) {
      const [address = '', prefixText] = cidr.trim().split('/');
      const version = isIP(address);
      if (version === 0) throw new Error(`not a CIDR: ${cidr}`);
      const prefix = prefixText === undefined ? (version === 4 ? 32 : 128) : Number(prefixText);
      if (!Number.isInteger(prefix)) throw new Error(`not a CIDR: ${cidr}`);
      try {
        allowed.addSubnet(address, prefix, version === 4 ? 'ipv4' : 'ipv6');
      } catch {
        throw new Error(`not a CIDR: ${cidr}`);
      }
    }
    return new AddressPolicy(allowed);
  }

  /** Why `address` is refused (e.g. "127.0.0.1 is a loopback address"), or null if allowed. */
  refusal(address: string): string | null {
    const ip = address.split('%')[0] ?? address; // drop an IPv6 zone id
    const version = isIP(ip);
    if (version === 0) return `${address} is not an IP address`;
    const family: Family = version === 4 ? 'ipv4' : 'ipv6';
    if (this.allowed.check(ip, family)) return null;
    for (const [label, list] of REFUSED_LISTS) {
      if (list.check(ip, family)) return `${address} is a ${label} address`;
    }
    if (family === 'ipv6') {
      for (const { ipv4, form } of embeddedIPv4(ip)) {
        const why = this.refusal(ipv4);
        if (why) return `${address} is a ${why.slice(`${ipv4} is a `.length)} (${form} of ${ipv4})`;
      }
    }
    return null;
  }
}

/**
 * The IPv4 addresses an IPv6 address carries, by the form that carries them. Parsed to bytes
 * (ipaddr.js), so every spelling of an address (compressed, expanded, dotted tail, hex tail)
 * is the same address. A NAT64 local-use prefix (64:ff9b:1::/48, RFC 8215) may be any of RFC
 * 6052's lengths within it: the IPv4 address at each of those positions is returned.
 */
export function embeddedIPv4(ipv6: string): Array<{ ipv4: string; form: string }> {
  let b: number[];
  try {
    b = ipaddr.IPv6.parse(ipv6).toByteArray();
  } catch {
    return [];
  }
  const v4 = (...i: number[]) => i.map((n) => b[n]).join('.');
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const is = (from: number, bytes: number[]) => bytes.every((x, i) => b[from + i] === x);
  const out: Array<{ ipv4: string; form: string }> = [];
  if (zero(0, 10) && is(10, [0xff, 0xff])) out.push({ ipv4: v4(12, 13, 14, 15), form: 'IPv4-mapped' });
  if (zero(0, 8) && is(8, [0xff, 0xff, 0, 0])) out.push({ ipv4: v4(12, 13, 14, 15), form: 'IPv4-translated' });
  if (zero(0, 12)) out.push({ ipv4: v4(12, 13, 14, 15), form: 'IPv4-compatible' });
  if (is(0, [0, 0x64, 0xff, 0x9b]) && zero(4, 12)) out.push({ ipv4: v4(12, 13, 14, 15), form: 'NAT64' });
  if (is(0, [0, 0x64, 0xff, 0x9b, 0, 1])) {
    // RFC 6052 §2.2: bits 64-71 and the suffix after the IPv4 address are zero, so a length
    // whose suffix is not zero is not the one in use; 0.0.0.0 is what a shorter length's
    // trailing zeros read as at /96, not a destination.
    const lengths = [[6, 7, 9, 10], [7, 9, 10, 11], [9, 10, 11, 12], [12, 13, 14, 15]].filter((at) => zero(at.at(-1)! + 1, 16) && (at[0] === 12 || b[8] === 0));
    const found = lengths.map((at) => v4(...at));
    for (const ipv4 of found.some((a) => a !== '0.0.0.0') ? found.filter((a) => a !== '0.0.0.0') : found) out.push({ ipv4, form: 'NAT64 local-use' });
  }
  if (is(0, [0x20, 0x02])) out.push({ ipv4: v4(2, 3, 4, 5), form: '6to4' });
  // Teredo (2001:0::/32): the client's public IPv4 is the last 32 bits, inverted.
  if (is(0, [0x20, 0x01, 0, 0])) out.push({ ipv4: [12, 13, 14, 15].map((n) => 255 - b[n]!).join('.'), form: 'Teredo' });
  return out;
}

/** The hostname of a URL as a resolver wants it (IPv6 literals without brackets). */
export function hostOf(url: URL): string {
  const h = url.hostname;
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
}

export type HostResolver = (host: string) => Promise<LookupAddress[]>;

/**
 * The name to look up for a URL's host. RFC 6761 §6.3: `localhost` and every name under it are
 * the loopback host, with or without the root's trailing dot (`localhost.`); they are looked up
 * as `localhost`, the system's own answer (resolvers differ on the other spellings: glibc does
 * not resolve `localhost.`), so they are refused as loopback like `localhost` itself, and reach
 * the same address when the operator allows it. Other names are looked up as written.
 */
export function lookupName(host: string): string {
  const h = host.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost') ? 'localhost' : host;
}

/** RFC 6761 §6.4: `.invalid` names never resolve; answered here without asking DNS. */
function isInvalidName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return h === 'invalid' || h.endsWith('.invalid');
}

export const systemResolver: HostResolver = (host) => dnsLookupAsync(host, { all: true, verbatim: true });

/**
 * Save-time check: null when the URL's host resolves and every one of its addresses is
 * allowed, else the reason. A host that does not resolve is refused: every attempt to it would
 * fail, and the user learns it now rather than from a delivery log six attempts later.
 */
export async function destinationRefusal(url: URL, policy: AddressPolicy, resolve: HostResolver = systemResolver): Promise<string | null> {
  const host = hostOf(url);
  if (isIP(host) !== 0) return policy.refusal(host);
  if (isInvalidName(host)) return `${host} does not resolve (.invalid names never do)`;
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(lookupName(host));
  } catch (err) {
    const code = (err as { code?: string }).code;
    // EAI_AGAIN is the resolver failing, not the name: the same URL may be accepted later.
    if (code === 'EAI_AGAIN') return `${host} could not be resolved right now (EAI_AGAIN); try again`;
    return `${host} does not resolve${code ? ` (${code})` : ''}`;
  }
  if (addresses.length === 0) return `${host} does not resolve to any address`;
  for (const a of addresses) {
    const why = policy.refusal(a.address);
    if (why) return `${host} resolves to ${why.replace(`${a.address} is`, `${a.address}, which is`)}`;
  }
  return null;
}

/** Raised at connect time; the delivery log shows its message. */
export class DestinationRefusedError extends Error {
  readonly code = 'EDESTREFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'DestinationRefusedError';
  }
}

/** A `lookup` for net/tls.connect that only yields allowed addresses. */
export function guardedLookup(policy: AddressPolicy, base: typeof dnsLookup = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    // The same name the save-time check looked up (`localhost.` as `localhost`).
    base(lookupName(hostname), { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses as LookupAddress[];
      const ok = list.filter((a) => policy.refusal(a.address) === null);
      if (ok.length === 0) {
        const why = list.map((a) => policy.refusal(a.address)).join('; ') || 'no addresses';
        return callback(new DestinationRefusedError(`destination refused: ${hostname} → ${why}`) as NodeJS.ErrnoException, '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, ok);
      const first = ok[0]!;
      callback(null, first.address, first.family);
    });
  };
}

// The client address a request is judged by (credential guessing is counted per address): the
// peer's address, or, with server.trust_proxy, the client X-Forwarded-For names first, as
// express's req.ip does with `trust proxy` true (the control plane's express app is set so). An
// IPv6 client counts by its /64, the block one subscriber usually holds, so walking the
// addresses of one's own /64 does not reset the count.
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  let address = req.socket.remoteAddress ?? '';
  if (trustProxy) {
    const forwarded = req.headers['x-forwarded-for'];
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
    if (first) address = first;
  }
  return counted(address);
}

/** IPv4-mapped IPv6 as IPv4; other IPv6 as its /64; anything else as given. */
function counted(address: string): string {
  if (address.startsWith('::ffff:') && isIP(address.slice(7)) === 4) return address.slice(7);
  if (isIP(address) !== 6) return address;
  try {
    const parts = ipaddr.IPv6.parse(address.split('%')[0]!).parts;
    return `${parts.slice(0, 4).map((p) => p.toString(16)).join(':')}::/64`;
  } catch {
    return address;
  }
}

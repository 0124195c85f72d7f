// The HTTPS receiver of bench/webhooks.ts, in its own process (a remote receiver's stand-in):
// answers 200 to every delivery and reports, over IPC, how many distinct deliveries arrived.
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { testPki } from '../test/webhooks/support/pki.ts';

const pki = testPki();
const seen = new Set<string>();
let requests = 0;
const server = createServer({ key: pki.serverKey, cert: pki.serverCert }, (req, res) => {
  req.resume();
  req.on('end', () => {
    requests++;
    seen.add(String(req.headers['x-service-webhook-id']));
    res.writeHead(200).end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.send!({ cmd: 'ready', url: `https://localhost:${(server.address() as AddressInfo).port}/hook`, ca: pki.caPem });
});
process.on('message', (m: { cmd: string }) => {
  if (m.cmd === 'count') process.send!({ cmd: 'count', distinct: seen.size, requests });
  if (m.cmd === 'stop') process.exit(0);
});

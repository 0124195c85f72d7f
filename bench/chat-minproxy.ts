// The reference point: a minimal keep-alive reverse proxy in plain node:http (no auth, no
// validation, no billing, no logging). Run as a child process by bench/chat.ts.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const target = new URL(process.env.UPSTREAM_URL!);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const server = http.createServer((req, res) => {
  const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent }, (ur) => {
    res.writeHead(ur.statusCode ?? 502, ur.headers);
    ur.pipe(res);
  });
  up.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(up);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
});
process.on('message', (m: { cpu?: boolean }) => {
  if (m.cpu) process.send!({ cpu: process.cpuUsage() });
});
process.on('disconnect', () => process.exit(0));

// A real HTTPS webhook receiver on 127.0.0.1 that records every request (raw body bytes,
// headers, arrival time) and answers as the test script says.
import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac } from 'node:crypto';
import { testPki } from './pki.ts';

export interface Received {
  n: number; // 1-based arrival number
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  at: number; // performance.now() at arrival
}

export interface Reply {
  status: number;
  delayMs?: number;
  headers?: Record<string, string>;
}

export type Script = (req: Received) => Reply;

export class Receiver {
  readonly requests: Received[] = [];
  script: Script;
  private readonly server: Server;

  private constructor(server: Server, script: Script) {
    this.server = server;
    this.script = script;
  }

  static async start(script: Script = () => ({ status: 200 }), opts: { stray?: boolean } = {}): Promise<Receiver> {
    const pki = testPki();
    const server = createServer({ key: opts.stray ? pki.strayKey : pki.serverKey, cert: opts.stray ? pki.strayCert : pki.serverCert });
    const receiver = new Receiver(server, script);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const rec: Received = { n: receiver.requests.length + 1, method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), at: performance.now() };
        receiver.requests.push(rec);
        const reply = receiver.script(rec);
        const send = () => {
          if (res.destroyed) return;
          res.writeHead(reply.status, reply.headers ?? {});
          res.end('ok');
        };
        if (reply.delayMs) setTimeout(send, reply.delayMs);
        else send();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** https://localhost:<port><path> — localhost resolves to 127.0.0.1 and matches the cert. */
  url(path = '/hook'): string {
    return `https://localhost:${this.port}${path}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** The spec's formula computed here directly, independent of engine/webhooks/signature.ts. */
export function independentSignature(secret: string, id: string, timestamp: string, rawBody: Buffer): string {
  return 'v1=' + createHmac('sha256', secret).update(`${id}.${timestamp}.`).update(rawBody).digest('hex');
}

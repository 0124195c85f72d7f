// A real HTTPS webhook receiver on 127.0.0.1 that records every request (raw body bytes,
// headers, arrival time) and answers as the test script says.
import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { testPki } from './pki.ts';

export interface Received {
  n: number; // 1-based arrival number
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  at: number; // performance.now() at arrival (the test thread's clock, also for ThreadReceiver)
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
    const server = receiverServer(opts.stray);
    const receiver = new Receiver(server, script);
    onEachRequest(server, (arrived, res) => {
      const rec: Received = { n: receiver.requests.length + 1, ...arrived };
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

/** The HTTPS server of a receiver (the stray certificate: one the gateway does not trust). */
export function receiverServer(stray = false): Server {
  const pki = testPki();
  return createServer({ key: stray ? pki.strayKey : pki.serverKey, cert: stray ? pki.strayCert : pki.serverCert });
}

/** Calls `arrived` with each request once its body is in, stamped then. */
export function onEachRequest(server: Server, arrived: (rec: Omit<Received, 'n'>, res: ServerResponse) => void): void {
  server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => arrived({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), at: performance.now() }, res));
  });
}

/**
 * A receiver answering 200 from a thread of its own: its event loop (TLS handshakes, parsing,
 * the arrival stamps) does not wait for the gateway's, which runs on the test's thread. For
 * tests of when deliveries arrive, on a machine busy enough to stall that thread.
 */
export class ThreadReceiver {
  readonly requests: Received[] = [];
  readonly port: number;
  private readonly worker: Worker;

  private constructor(worker: Worker, port: number) {
    this.worker = worker;
    this.port = port;
  }

  static async start(): Promise<ThreadReceiver> {
    // The test PKI is made once per thread: the thread serves this thread's, which the gateway trusts.
    const pki = testPki();
    const worker = new Worker(new URL('./receiver-thread.ts', import.meta.url), { workerData: { key: pki.serverKey, cert: pki.serverCert } });
    const port = await new Promise<number>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    const receiver = new ThreadReceiver(worker, port);
    worker.on('message', (rec: Omit<Received, 'n'>) => {
      // Stamped on the thread's clock plus its origin: `at` is made this thread's performance.now().
      receiver.requests.push({ ...rec, n: receiver.requests.length + 1, body: Buffer.from(rec.body), at: rec.at - performance.timeOrigin });
    });
    return receiver;
  }

  url(path = '/hook'): string {
    return `https://localhost:${this.port}${path}`;
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

/** The spec's formula computed here directly, independent of engine/webhooks/signature.ts. */
export function independentSignature(secret: string, id: string, timestamp: string, rawBody: Buffer): string {
  return 'v1=' + createHmac('sha256', secret).update(`${id}.${timestamp}.`).update(rawBody).digest('hex');
}

// A minimal upstream for the gateway benchmarks: it drains every request body without parsing
// it (so it costs the benchmark process almost nothing) and answers in the shapes of the
// "content generation tasks" and "async header" styles: submits are accepted, the first poll
// finds the task succeeded (or, with `polls: n`, the n-th poll of a task does; earlier ones find
// it running).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Stub {
  url: string;
  submits(): number;
  /** Polls that found their task finished. */
  finished(): number;
  bytes(): number;
  close(): Promise<void>;
}

export async function startStub(opts: { polls?: number } = {}): Promise<Stub> {
  const polls = opts.polls ?? 1;
  const seen = new Map<string, number>();
  let finished = 0;
  let seq = 0;
  let bytes = 0;
  let submits = 0;
  const server: Server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      let body: string;
      if (req.method === 'POST') {
        submits++;
        const id = `stub-${++seq}`;
        body = `{"id":"${id}","output":{"task_id":"${id}","task_status":"PENDING"},"request_id":"r"}`;
      } else if (polls > 1 && (seen.set(req.url!, (seen.get(req.url!) ?? 0) + 1).get(req.url!)! < polls)) {
        body = '{"status":"running","output":{"task_status":"RUNNING"}}';
      } else {
        // Every task is done at its first poll (or its n-th), in the shapes of both styles.
        seen.delete(req.url!);
        finished++;
        body = '{"status":"succeeded","content":{"video_url":"https://files.example.com/v.mp4"},"duration":5,"usage":{"duration":5},"output":{"task_status":"SUCCEEDED","results":[{"url":"https://files.example.com/0.png"}],"video_url":"https://files.example.com/v.mp4"}}';
      }
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    submits: () => submits,
    finished: () => finished,
    bytes: () => bytes,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

// Run as a child process (bench/media.ts): report the URL, answer counter queries over IPC.
if (process.argv[1] === new URL(import.meta.url).pathname && process.send) {
  const stub = await startStub();
  process.on('message', (m: { cmd: string }) => {
    if (m.cmd === 'bytes') process.send!({ cmd: 'bytes', bytes: stub.bytes(), submits: stub.submits() });
    else if (m.cmd === 'cpu') process.send!({ cmd: 'cpu', cpu: process.cpuUsage() });
    else if (m.cmd === 'stop') void stub.close().then(() => process.exit(0));
  });
  process.send({ cmd: 'ready', url: stub.url });
}

// Result store (docs/results.md): MB/s copied for one large file (200 MB; BENCH_COPY_MB to
// change it) from a provider's file host into the result store, and how much the gateway
// process's RSS rises while it copies (read from /proc/<pid>/status every 20 ms). The gateway
// is a child process (bench/result-copy-gateway.ts), one per backend: local directory, and S3
// through s3rver (which runs in this process, as a remote store would elsewhere); BENCH_BACKENDS
// (local,s3) picks them. A 1 MB copy
// first loads what a copy loads (the SDK, the streams), so the rise is the copy's own.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { child, stop } from './support.ts';

const MB = 1024 * 1024;
const SIZE_MB = Number(process.env.BENCH_COPY_MB ?? 200);
const CHUNK = randomBytes(MB);
let served = { start: 0, end: 0 };

// The provider's file host: `size` bytes of video, streamed with back-pressure (never held here either).
const files = createServer((req, res) => {
  const size = Number(new URL(req.url!, 'http://x').searchParams.get('mb')) * MB;
  res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': size });
  served = { start: performance.now(), end: 0 };
  let sent = 0;
  const pump = () => {
    while (sent < size) {
      sent += MB;
      if (!res.write(CHUNK)) return void res.once('drain', pump);
    }
    res.end(() => (served.end = performance.now()));
  };
  pump();
});
await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
const filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;

// Model E's upstream: each task's video is the file of the size its prompt names.
const tasks = new Map<string, number>();
const upstream = createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const json = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  if (req.method === 'POST') {
    const id = `t${tasks.size + 1}`;
    tasks.set(id, Number(JSON.parse(Buffer.concat(chunks).toString()).input.prompt));
    return json({ output: { task_id: id, task_status: 'PENDING' } });
  }
  const id = req.url!.split('/').pop()!;
  json({ output: { task_status: 'SUCCEEDED', video_url: `${filesUrl}/v.mp4?mb=${tasks.get(id)}` }, usage: { duration: 5 } });
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

async function copy(url: string, key: string, mb: number): Promise<{ status: string; ms: number }> {
  const t0 = performance.now();
  const path = '/vendors/provider_e/v1/model_e/generation';
  const created = await (await fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: String(mb) }) })).json();
  for (;;) {
    const t = await (await fetch(`${url}${path}/${created.task_info.id}`, { headers: { authorization: `Bearer ${key}` } })).json();
    if (t.task_info.status === 'completed' || t.task_info.status === 'failed') return { status: t.task_info.status, ms: performance.now() - t0 };
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function run(backend: 'local' | 's3', env: Record<string, string>): Promise<void> {
  const { proc, msg } = await child('result-copy-gateway.ts', { UPSTREAM_URL: upstreamUrl, RESULTS_BACKEND: backend, ...env });
  try {
    await copy(msg.url, msg.key, 1);
    await new Promise((r) => setTimeout(r, 500));
    const before = rss(msg.pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rss(msg.pid))), 20);
    const done = await copy(msg.url, msg.key, SIZE_MB);
    clearInterval(sampler);
    const transferS = (served.end - served.start) / 1000;
    console.log(`${backend.padEnd(5)}  ${done.status}  ${SIZE_MB} MB: ${(SIZE_MB / transferS).toFixed(0)} MB/s while the file streamed (${transferS.toFixed(2)} s), ${done.ms.toFixed(0)} ms create → completed; RSS ${(before / MB).toFixed(0)} → peak ${(peak / MB).toFixed(0)} MB (rise ${((peak - before) / MB).toFixed(1)} MB)`);
  } finally {
    await stop(proc);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'bench-results-'));
try {
  const backends = (process.env.BENCH_BACKENDS ?? 'local,s3').split(',');
  if (backends.includes('local')) await run('local', { RESULTS_DIR: join(dir, 'local') });
  if (backends.includes('s3')) await runS3(dir);
} finally {
  rmSync(dir, { recursive: true, force: true });
  files.close();
  upstream.close();
}

async function runS3(dir: string): Promise<void> {
  const s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: join(dir, 's3') });
  const { port } = await s3.run();
  const client = new S3Client({ endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  await client.send(new CreateBucketCommand({ Bucket: 'bench-results' }));
  client.destroy();
  await run('s3', { S3_ENDPOINT: `http://127.0.0.1:${port}`, S3_BUCKET: 'bench-results' });
  await s3.close();
}

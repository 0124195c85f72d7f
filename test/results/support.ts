// Result-store tests' real servers: a provider's file host (plain files, files that need the
// vendor's key, redirects, slow and failing answers) and an S3-compatible server (s3rver, from
// the npm registry, speaking the S3 protocol to the AWS SDK: multipart uploads, presigned URLs
// and Range requests checked to work with it on Node 24).
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

export interface HostedFile {
  bytes: Buffer;
  type: string;
  /** The request must carry this Authorization header (the vendor's key), else 403. */
  key?: string;
  /** Answer this status the first `failFirst` times (a transient provider failure). */
  failFirst?: number;
  /** Sent without Content-Length (chunked), so only the byte count can catch an oversized file. */
  chunked?: boolean;
  /** A redirect to this URL instead of the bytes. */
  redirect?: string;
  /** Hold the body this long before each chunk of 64 KB (a slow provider). */
  delayMs?: number;
}

/** A provider's file host on 127.0.0.1: `put(path, file)`, then `url(path)`. */
export class FileHost {
  private readonly files = new Map<string, HostedFile>();
  readonly hits = new Map<string, { count: number; auth: (string | undefined)[] }>();
  private server?: Server;
  port = 0;

  put(path: string, file: HostedFile): string {
    this.files.set(path, file);
    return this.url(path);
  }

  url(path: string, host = '127.0.0.1'): string {
    return `http://${host}:${this.port}${path}`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.answer(req.url ?? '/', req.headers.authorization, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  private async answer(path: string, auth: string | undefined, res: ServerResponse): Promise<void> {
    const hit = this.hits.get(path) ?? { count: 0, auth: [] };
    hit.count++;
    hit.auth.push(auth);
    this.hits.set(path, hit);
    const f = this.files.get(path);
    if (!f) return void res.writeHead(404).end();
    if (f.failFirst && hit.count <= f.failFirst) return void res.writeHead(503).end('busy');
    if (f.redirect) return void res.writeHead(302, { location: f.redirect }).end();
    if (f.key && auth !== f.key) return void res.writeHead(403, { 'content-type': 'text/plain' }).end('forbidden');
    res.writeHead(200, f.chunked ? { 'content-type': f.type } : { 'content-type': f.type, 'content-length': f.bytes.length });
    if (!f.delayMs) return void res.end(f.bytes);
    for (let at = 0; at < f.bytes.length && !res.destroyed; at += 65536) {
      await new Promise((r) => setTimeout(r, f.delayMs));
      res.write(f.bytes.subarray(at, at + 65536));
    }
    res.end();
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** s3rver on loopback with one bucket, and the `results.s3` YAML that points the gateway at it. */
export class TestS3 {
  private server?: S3rver;
  private dir = '';
  readonly bucket = 'gateway-results';
  endpoint = '';

  async start(): Promise<this> {
    this.dir = mkdtempSync(join(tmpdir(), 'gw-s3-'));
    this.server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: this.dir });
    const { port } = await this.server.run();
    this.endpoint = `http://127.0.0.1:${port}`;
    const s3 = this.client();
    await s3.send(new CreateBucketCommand({ Bucket: this.bucket }));
    s3.destroy();
    return this;
  }

  client(): S3Client {
    return new S3Client({ endpoint: this.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  }

  yaml(extra = ''): string {
    return `s3: { bucket: ${this.bucket}, prefix: "t${randomBytes(4).toString('hex')}/", endpoint: "${this.endpoint}", force_path_style: true, access_key_id: S3RVER, secret_access_key: S3RVER${extra} }`;
  }

  async close(): Promise<void> {
    await this.server?.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export function randomBytesOf(size: number): Buffer {
  return randomBytes(size);
}

export function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

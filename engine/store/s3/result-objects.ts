// The `s3` result backend: S3-compatible object storage through the AWS SDK v3. Files are
// uploaded with @aws-sdk/lib-storage (multipart above one part, parts of 5 MB, the least S3
// takes, one in flight while the next fills: about 10 MB held per copy whatever the file's
// size; more in flight raised a 200 MB copy's RSS rise from ~63 to ~85 MB, bench/result-copy.ts).
// An upload that fails is aborted by the SDK, and one cut by a killed process never becomes an object (S3 publishes a
// multipart object only at CompleteMultipartUpload; the bucket's AbortIncompleteMultipartUpload
// rule reclaims its parts: docs/results.md). Clients may be sent to a presigned GET instead of
// the gateway streaming the bytes (results.s3.presign).
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, NoSuchKey, NotFound, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Readable } from 'node:stream';
import type { ListedFile, ResultBackend, StoredFile } from '../../results/store.ts';

export interface S3ResultOptions {
  bucket: string;
  /** Prepended to every key (e.g. `results/`). */
  prefix: string;
  region: string;
  /** An S3-compatible endpoint (MinIO, R2, a test server); unset: AWS's own for the region. */
  endpoint?: string;
  forcePathStyle: boolean;
  /** Unset: the SDK's default chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, profiles, roles). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

const PART_BYTES = 5 * 1024 * 1024;
const PARTS_IN_FLIGHT = 1;

export class S3ResultObjects implements ResultBackend {
  readonly kind = 's3' as const;
  private readonly s3: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(opts: S3ResultOptions) {
    this.bucket = opts.bucket;
    this.prefix = opts.prefix;
    this.s3 = new S3Client({ region: opts.region, endpoint: opts.endpoint, forcePathStyle: opts.forcePathStyle, credentials: opts.credentials });
  }

  async put(key: string, body: Readable, contentType: string): Promise<StoredFile> {
    const started = Date.now();
    const upload = new Upload({
      client: this.s3,
      params: { Bucket: this.bucket, Key: this.prefix + key, Body: body, ContentType: contentType },
      partSize: PART_BYTES,
      queueSize: PARTS_IN_FLIGHT,
    });
    await upload.done();
    const file = await this.stat(key);
    if (!file) throw new Error(`the object ${key} is missing right after its upload`);
    return { ...file, writtenAt: Math.min(file.writtenAt, started) };
  }

  /**
   * One PutObject with If-None-Match: * (AWS S3 refuses it with 412 when the key exists, and with
   * 409 while another conditional write of the key is in flight: retried by the next run). The
   * HEAD before it answers a taken key on servers that ignore the condition on PUT (s3rver, the
   * tests' server, does: docs/decisions.md); only the condition closes the race of two writers.
   */
  async create(key: string, body: Buffer, contentType: string): Promise<StoredFile | undefined> {
    if (await this.stat(key)) return undefined;
    const started = Date.now();
    try {
      await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.prefix + key, Body: body, ContentType: contentType, IfNoneMatch: '*' }));
    } catch (err) {
      if (statusOf(err) === 412) return undefined;
      throw err;
    }
    const file = await this.stat(key);
    if (!file) throw new Error(`the object ${key} is missing right after its upload`);
    return { ...file, writtenAt: Math.min(file.writtenAt, started) };
  }

  async stat(key: string): Promise<StoredFile | undefined> {
    try {
      const h = await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }));
      return { size: h.ContentLength ?? 0, contentType: h.ContentType ?? 'application/octet-stream', etag: h.ETag ?? `"${key}"`, writtenAt: h.LastModified?.getTime() ?? 0 };
    } catch (err) {
      if (err instanceof NotFound || err instanceof NoSuchKey || statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  async read(key: string, range?: { start: number; end: number }): Promise<Readable> {
    const res = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }));
    return res.Body as Readable;
  }

  async presign(key: string, opts: { expiresInS: number; contentDisposition: string }): Promise<string> {
    const get = new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key, ResponseContentDisposition: opts.contentDisposition });
    return getSignedUrl(this.s3, get, { expiresIn: opts.expiresInS });
  }

  async remove(key: string): Promise<void> {
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }));
  }

  async *list(prefix: string): AsyncIterable<ListedFile> {
    let token: string | undefined;
    do {
      const page = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix + prefix, ContinuationToken: token }));
      for (const o of page.Contents ?? []) {
        if (o.Key) yield { key: o.Key.slice(this.prefix.length), size: o.Size ?? 0, writtenAt: o.LastModified?.getTime() ?? 0 };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async close(): Promise<void> {
    this.s3.destroy();
  }
}

function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

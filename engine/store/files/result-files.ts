// The `local` result backend: files under results.local.dir, one data file and one metadata
// file (`<name>.meta.json`: content type, size, ETag) per key. A copy streams into a partial
// file (`.part-<random>` beside its key) and is renamed into place with its metadata, so a reader
// sees a whole file or none; partial files left by a killed process are deleted by the walk of
// the retention sweep once they are an hour old. In Redis mode every gateway process must see
// the same directory (a shared volume): docs/results.md. A publish fsyncs the directories it
// changed: a rename is durable only once its directory is, and a ledger segment's lines leave the
// wallet store as soon as it is published.
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { link, mkdir, open, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ListedFile, ResultBackend, StoredFile } from '../../results/store.ts';

const META = '.meta.json';
const PART = '.part-';
/** A partial file this old belongs to a copy that was cut short (a copy's own timeout is far below it). */
const STALE_PART_MS = 3_600_000;

export class LocalResultFiles implements ResultBackend {
  readonly kind = 'local' as const;
  private readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  private path(key: string): string {
    // Keys are built by the service from ids and fixed names; refuse anything that could climb out.
    if (key.split('/').some((part) => part === '' || part === '.' || part === '..' || part.startsWith('.'))) throw new Error(`bad result key ${key}`);
    return join(this.dir, ...key.split('/'));
  }

  async put(key: string, body: Readable, contentType: string): Promise<StoredFile> {
    const target = this.path(key);
    const created = await mkdir(dirname(target), { recursive: true });
    const part = partOf(target);
    const hash = createHash('sha256');
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    try {
      // flush: fsync before close, so the rename publishes bytes that are on disk (a ledger segment
      // is trimmed from the store once it is written).
      await pipeline(body, count, createWriteStream(part, { flush: true }));
      const file: StoredFile = { size, contentType, etag: etagOf(hash), writtenAt: Date.now() };
      // Metadata first: a data file without it is never served (stat reads both).
      await writeFile(`${part}${META}`, JSON.stringify(file));
      await rename(`${part}${META}`, `${target}${META}`);
      await rename(part, target);
      await syncDirs(dirname(target), created);
      return file;
    } catch (err) {
      await rm(part, { force: true });
      await rm(`${part}${META}`, { force: true });
      throw err;
    }
  }

  async create(key: string, body: Buffer, contentType: string): Promise<StoredFile | undefined> {
    const target = this.path(key);
    const created = await mkdir(dirname(target), { recursive: true });
    const nonce = randomBytes(8).toString('hex');
    const part = join(dirname(target), `${PART}${nonce}`);
    // The ETag names this write, not a digest of its bytes: a created key is never replaced, so
    // one tag is only ever given to one body (a SHA-256 of each 1.2 MB ledger segment was ~0.6 µs
    // of every sync chat on the memory store, which archives as it goes).
    const file: StoredFile = { size: body.length, contentType, etag: `"c${body.length.toString(36)}-${nonce}"`, writtenAt: Date.now() };
    let stage: 'part' | 'meta' | 'done' = 'part';
    try {
      await writeFile(part, body, { flush: true });
      // link, unlike rename, never replaces: EEXIST when the key is taken. The data decides, so
      // its metadata follows it (a taken key's metadata stays the winner's).
      try {
        await link(part, target);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
        throw err;
      }
      stage = 'meta';
      await unlink(part);
      await writeFile(`${part}${META}`, JSON.stringify(file));
      await rename(`${part}${META}`, `${target}${META}`);
      await syncDirs(dirname(target), created);
      stage = 'done';
      return file;
    } finally {
      // What a failed or refused write left behind (no system call when all went well).
      if (stage !== 'done') await rm(part, { force: true });
      if (stage === 'meta') await rm(`${part}${META}`, { force: true });
    }
  }

  async stat(key: string): Promise<StoredFile | undefined> {
    const target = this.path(key);
    try {
      const [meta, data] = await Promise.all([readFile(`${target}${META}`, 'utf8'), stat(target)]);
      const file = JSON.parse(meta) as StoredFile;
      // The metadata of an earlier copy beside the data of a later one (same bytes): the data decides the size.
      return data.size === file.size ? file : undefined;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async read(key: string, range?: { start: number; end: number }): Promise<Readable> {
    return createReadStream(this.path(key), range ? { start: range.start, end: range.end } : undefined);
  }

  async presign(): Promise<undefined> {
    return undefined;
  }

  async remove(key: string): Promise<void> {
    const target = this.path(key);
    await rm(target, { force: true });
    await rm(`${target}${META}`, { force: true });
  }

  async *list(prefix: string): AsyncIterable<ListedFile> {
    const root = prefix ? this.path(prefix.replace(/\/$/, '')) : this.dir;
    yield* this.walk(root);
  }

  private async *walk(dir: string): AsyncIterable<ListedFile> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        yield* this.walk(path);
        continue;
      }
      const partial = entry.name.startsWith(PART);
      if (entry.name.endsWith(META) && !partial) continue;
      const s = await stat(path).catch(() => undefined);
      if (!s) continue;
      if (partial) {
        if (Date.now() - s.mtimeMs > STALE_PART_MS) await rm(path, { force: true });
        continue;
      }
      yield { key: relative(this.dir, path).split(sep).join('/'), size: s.size, writtenAt: s.mtimeMs };
    }
  }

  async close(): Promise<void> {}
}

function partOf(target: string): string {
  return join(dirname(target), `${PART}${randomBytes(8).toString('hex')}`);
}

function etagOf(sha256: Hash): string {
  return `"${sha256.digest('base64url').slice(0, 32)}"`;
}

/**
 * fsync `dir`, and when mkdir made it (`created`: the topmost directory it made), the parent of
 * each directory made: a new entry survives a power loss only once the directory holding it is
 * on disk.
 */
async function syncDirs(dir: string, created: string | undefined): Promise<void> {
  const dirs = [dir];
  for (let d = dir; created !== undefined && d !== dirname(created) && dirname(d) !== d; ) {
    d = dirname(d);
    dirs.push(d);
  }
  for (const d of dirs) {
    const fd = await open(d, 'r');
    try {
      await fd.sync();
    } finally {
      await fd.close();
    }
  }
}

// Shared media bytes in Redis (see engine/media/shared.ts): one string per content hash, with
// a TTL so a task that never reaches its submit does not pin memory. Content-addressed, so two
// tasks uploading the same image share one key.
import type { SharedMediaStore } from '../../media/shared.ts';
import { Keys, type RedisStoreOptions } from './keys.ts';

export class RedisMediaStore implements SharedMediaStore {
  private readonly client: RedisStoreOptions['client'];
  private readonly keys: Keys;

  constructor(opts: RedisStoreOptions) {
    this.client = opts.client;
    this.keys = new Keys(opts.prefix);
  }

  private key(hash: string): string {
    return this.keys.media(hash);
  }

  async save(hash: string, bytes: Uint8Array, ttlMs: number): Promise<void> {
    await this.client.set(this.key(hash), Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), 'PX', Math.max(1, Math.round(ttlMs)));
  }

  async load(hash: string): Promise<Uint8Array | undefined> {
    return (await this.client.getBuffer(this.key(hash))) ?? undefined;
  }

  async remove(hashes: readonly string[]): Promise<void> {
    if (hashes.length) await Promise.all(hashes.map((h) => this.client.del(this.key(h))));
  }
}

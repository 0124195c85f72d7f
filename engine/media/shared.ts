// Media bytes shared between processes (redis mode). The process that received an upload keeps
// its blobs in memory (blobs.ts), but the upstream submit may run in another process, or after a
// restart: so a task's blobs are also written to the shared store when the task is created, and
// fetched back by whichever process submits it. The memory store needs none of this.
import { mediaBlobs, MediaGoneError, MEDIA_TOKEN_PREFIX } from './blobs.ts';

export interface SharedMediaStore {
  save(hash: string, bytes: Uint8Array, ttlMs: number): Promise<void>;
  load(hash: string): Promise<Uint8Array | undefined>;
  remove(hashes: readonly string[]): Promise<void>;
}

const hashOf = (token: string) => token.slice(MEDIA_TOKEN_PREFIX.length);

/** Write the bytes of every token (held by this process) to the shared store. */
export async function shareMedia(store: SharedMediaStore, tokens: readonly string[], ttlMs: number): Promise<void> {
  for (const token of new Set(tokens)) {
    const bytes = mediaBlobs.bytes(token);
    if (bytes) await store.save(hashOf(token), bytes, ttlMs);
  }
}

/**
 * Make every token's bytes available in this process, fetching what it does not hold; each
 * token fetched is referenced once (release it after use, like the tokens held already).
 * Returns the tokens this call adopted. Throws MediaGoneError when the shared copy is gone too.
 */
export async function adoptMedia(store: SharedMediaStore, tokens: readonly string[]): Promise<string[]> {
  const adopted: string[] = [];
  for (const token of new Set(tokens)) {
    if (mediaBlobs.bytes(token)) continue;
    const bytes = await store.load(hashOf(token));
    if (!bytes) {
      mediaBlobs.release(adopted);
      throw new MediaGoneError('an uploaded media file is no longer held by the gateway');
    }
    mediaBlobs.adopt(token, bytes);
    adopted.push(token);
  }
  return adopted;
}

export function forgetSharedMedia(store: SharedMediaStore, tokens: readonly string[]): Promise<void> {
  return store.remove([...new Set(tokens)].map(hashOf));
}

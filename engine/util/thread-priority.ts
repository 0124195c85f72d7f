// Pool threads (media decoding, webhook signing and sending) run at a lower priority: on Linux
// a thread has its own nice value, so when cores are short they yield the CPU to the API's
// event loop, and a burst of background work delays client requests as little as possible.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

export function lowerThisThreadPriority(nice = 10): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, nice);
  } catch {
    /* not Linux, or not allowed: the thread keeps the default priority */
  }
}

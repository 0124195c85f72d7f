// Threads that are not the API's event loop run at a lower priority: on Linux a thread has its
// own nice value, so when cores are short they yield the CPU to the event loop, and background
// work delays client requests as little as possible.
// - Pool threads (media decoding, webhook signing and sending) lower themselves.
// - V8's platform threads ("V8Worker": concurrent marking, sweeping, parallel scavenges) are
//   lowered by the gateway at start. On a busy core, an old-generation cycle's helpers otherwise
//   take turns with the event loop for 40–50 ms; lowered, they use the time the loop leaves idle,
//   and a cycle costs one pause of 7–19 ms (bench/chat.ts at nice 19, gateway alone on one core,
//   2,000 req/s). Nice 10, not 19: the event loop sometimes waits for them (a scavenge joins its
//   helpers), and on a machine whose other cores are busy a thread at 19 gets almost no CPU.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

export const BACKGROUND_NICE = 10;

export function lowerThisThreadPriority(nice = BACKGROUND_NICE): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, nice);
  } catch {
    /* not Linux, or not allowed: the thread keeps the default priority */
  }
}

/** Lower this process's V8 platform threads (created at start-up; their number is fixed). */
export function lowerV8ThreadPriority(nice = BACKGROUND_NICE): void {
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      if (readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === 'V8Worker') setPriority(Number(tid), nice);
    }
  } catch {
    /* not Linux, or not allowed: the threads keep the default priority */
  }
}

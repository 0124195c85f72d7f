// Waiting on a condition the code under test reaches asynchronously, polled every 5 ms.
export type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

/** Poll `check` every 5 ms until it returns a truthy value; fail after `timeoutMs`. */
export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 5000, what = 'condition'): Promise<Truthy<T>> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as Truthy<T>;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

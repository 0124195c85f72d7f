// A time limit on one exchange (an upstream call, a webhook delivery): a signal that aborts with
// the DOMException named TimeoutError that AbortSignal.timeout() gives, and `clear` to call once
// the exchange is over.
// Not AbortSignal.timeout() itself: its timer (with the weak reference to the signal it holds)
// stays alive until the time is up even when the exchange ended long before. At thousands of
// calls a second with 30 s limits that is ~10^5 live timers, each copied by the scavenger into
// the old generation only to be collected there later; here the timer goes with the exchange.
export interface Deadline {
  readonly signal: AbortSignal;
  clear(): void;
}

export function deadline(ms: number): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms);
  timer.unref();
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

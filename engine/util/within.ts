// Waiting for something for a bounded time (readiness probes, shutdown): the outcome of `p` if
// it settles within `ms` (`done` fulfilled, `failed` rejected), else `late`. `p` itself is not
// cancelled; the timer does not outlive the wait.
export type Outcome = 'done' | 'failed' | 'late';

export function within(p: Promise<unknown>, ms: number): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Outcome>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms), 'late')));
  return Promise.race([p.then((): Outcome => 'done', (): Outcome => 'failed'), late]).finally(() => clearTimeout(timer));
}

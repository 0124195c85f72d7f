// Fixtures are upstream answers with {{placeholders}} that the sandbox fills in
// (engine/sandbox/simulator.ts). The tools fill them with sample values the same way, so a
// mapping is tried on what the sandbox will really serve.
export const FIXTURE_VARS = ['upstream_task_id', 'prompt', 'now_ms', 'now_s', 'now_iso', 'files_url'] as const;

/** Fixtures that are not poll answers: the submit answer, and the refusal `sandbox.reject` plays. */
export const SUBMIT_FIXTURES: ReadonlySet<string> = new Set(['created', 'rejected']);
/** Placeholders only some fixtures get. */
const EXTRA_VARS: Readonly<Record<string, readonly string[]>> = { rejected: ['message'] };

/** Fixture names the sandbox plays, and the task state each must map onto. */
export const POLL_FIXTURE_STATES: Readonly<Record<string, 'pending' | 'processing' | 'completed' | 'failed'>> = {
  queued: 'pending',
  running: 'processing',
  succeeded: 'completed',
  failed: 'failed',
};

export function sampleVars(prompt = 'a sample prompt'): Record<string, string | number> {
  const now = Date.UTC(2025, 0, 1);
  return {
    upstream_task_id: 'sbxSampleTask0001',
    prompt,
    now_ms: now,
    now_s: Math.floor(now / 1000),
    now_iso: new Date(now).toISOString(),
    files_url: 'http://127.0.0.1:9/_files',
  };
}

export function fillFixture(fixture: unknown, vars: Record<string, string | number> = sampleVars()): unknown {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const whole = /^\{\{(\w+)\}\}$/.exec(v);
      if (whole && whole[1]! in vars) return vars[whole[1]!];
      return v.replace(/\{\{(\w+)\}\}/g, (m, k: string) => (k in vars ? String(vars[k]) : m));
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(fixture);
}

/** Placeholders a fixture uses that the sandbox does not fill. */
export function unknownPlaceholders(fixture: unknown, name = ''): string[] {
  const text = JSON.stringify(fixture) ?? '';
  const known = new Set<string>([...FIXTURE_VARS, ...(EXTRA_VARS[name] ?? [])]);
  const names = new Set<string>();
  for (const m of text.matchAll(/\{\{(\w+)\}\}/g)) if (!known.has(m[1]!)) names.add(m[1]!);
  return [...names];
}

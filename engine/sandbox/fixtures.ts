// Fixture templates: recorded upstream answers with {{placeholders}} the sandbox fills in.
// A string that is exactly one placeholder takes the variable's own type (so "{{now_ms}}"
// becomes a number); placeholders inside longer strings are replaced as text.

/** The placeholders every fixture may use. */
export interface FixtureVars {
  upstream_task_id: string;
  prompt: string;
  now_ms: number;
  now_s: number;
  now_iso: string;
  files_url: string;
  [extra: string]: string | number;
}

export function fixtureVars(upstreamTaskId: string, prompt: string, nowMs: number, filesUrl: string, extra: Record<string, string> = {}): FixtureVars {
  return { upstream_task_id: upstreamTaskId, prompt, now_ms: nowMs, now_s: Math.floor(nowMs / 1000), now_iso: new Date(nowMs).toISOString(), files_url: filesUrl, ...extra };
}

export function fillFixture(fixture: unknown, vars: Record<string, string | number>): unknown {
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

/** A fixture as an HTTP answer: `{"$status": N, "$body": ...}` carries a status (the body may be left out); anything else is a 200 body. */
export function fixtureAnswer(fixture: unknown): { status: number; body: unknown } {
  if (fixture && typeof fixture === 'object' && !Array.isArray(fixture) && '$status' in fixture) {
    const f = fixture as { $status: unknown; $body?: unknown };
    const status = Number(f.$status);
    return { status: Number.isInteger(status) && status >= 100 && status <= 599 ? status : 200, body: f.$body };
  }
  return { status: 200, body: fixture };
}

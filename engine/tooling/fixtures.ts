// Fixtures are upstream answers with {{placeholders}} that the sandbox fills in
// (engine/sandbox/simulator.ts). The tools fill them with sample values the same way, so a
// mapping is tried on what the sandbox will really serve.
import { COMPLETION_FIXTURE_VARS } from '../sandbox/chat-simulator.ts';
import { fillFixture as fillTemplate, fixtureVars } from '../sandbox/fixtures.ts';

export const FIXTURE_VARS = ['upstream_task_id', 'prompt', 'now_ms', 'now_s', 'now_iso', 'files_url'] as const;

/** Fixtures that are not poll answers: the submit answer, and the refusal `sandbox.reject` plays. */
export const SUBMIT_FIXTURES: ReadonlySet<string> = new Set(['created', 'rejected']);
/** Placeholders only some fixtures get: the refusal's message, and what the chat simulator fills in a completion. */
const EXTRA_VARS: Readonly<Record<string, readonly string[]>> = { rejected: ['message'], completion: COMPLETION_FIXTURE_VARS };

/** Fixture names the sandbox plays, and the task state each must map onto. */
export const POLL_FIXTURE_STATES: Readonly<Record<string, 'pending' | 'processing' | 'completed' | 'failed'>> = {
  queued: 'pending',
  running: 'processing',
  succeeded: 'completed',
  failed: 'failed',
  cancelled: 'failed', // polls after the route's upstream cancel
};

export function sampleVars(prompt = 'a sample prompt'): Record<string, string | number> {
  return fixtureVars('sbxSampleTask0001', prompt, Date.UTC(2025, 0, 1), 'http://127.0.0.1:9/_files');
}

export function fillFixture(fixture: unknown, vars: Record<string, string | number> = sampleVars()): unknown {
  return fillTemplate(fixture, vars);
}

/** Placeholders a fixture uses that the sandbox does not fill. */
export function unknownPlaceholders(fixture: unknown, name = ''): string[] {
  const text = JSON.stringify(fixture) ?? '';
  const known = new Set<string>([...FIXTURE_VARS, ...(EXTRA_VARS[name] ?? [])]);
  const names = new Set<string>();
  for (const m of text.matchAll(/\{\{(\w+)\}\}/g)) if (!known.has(m[1]!)) names.add(m[1]!);
  return [...names];
}

// Fixtures are upstream answers with {{placeholders}} that the sandbox fills in
// (engine/sandbox/simulator.ts). The tools fill them with sample values the same way, so a
// mapping is tried on what the sandbox will really serve (engine/sandbox/fixture-run.ts runs
// them end to end).
import { COMPLETION_FIXTURE_VARS } from '../sandbox/chat-simulator.ts';
import { fillFixture as fillTemplate } from '../sandbox/fixtures.ts';
import { sampleFixtureVars } from '../sandbox/fixture-run.ts';

export const FIXTURE_VARS = ['upstream_task_id', 'prompt', 'now_ms', 'now_s', 'now_iso', 'files_url', 'base_url'] as const;

/** Placeholders only some fixtures get: the refusal's message, and what the chat simulator fills in a completion. */
const EXTRA_VARS: Readonly<Record<string, readonly string[]>> = { rejected: ['message'], completion: COMPLETION_FIXTURE_VARS };

export function fillFixture(fixture: unknown, vars: Record<string, string | number> = sampleFixtureVars()): unknown {
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

// Renders a DiffReport as Markdown a reviewer pastes into a pull request, or as plain text.
import type { Change, ChangeClass, DiffReport } from './diff.ts';

const HEADINGS: Record<ChangeClass, string> = {
  breaking: 'Breaking changes for API clients',
  compatible: 'Compatible changes for API clients',
  billing: 'Billing',
  upstream: 'Upstream mapping changes',
  docs: 'Documentation',
};

const cell = (s: string | undefined) => (s ?? '—').replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderMarkdown(r: DiffReport): string {
  const lines: string[] = [];
  const total = Object.values(r.counts).reduce((a, b) => a + b, 0);
  lines.push(`## Gateway descriptors: \`${r.before}\` → \`${r.after}\``, '');
  if (total === 0) {
    lines.push('No changes for API clients, billing or upstreams.');
    return `${lines.join('\n')}\n`;
  }
  const verdict = r.counts.breaking ? `**${r.counts.breaking} breaking change(s)**` : 'No breaking changes';
  lines.push(`${verdict} · ${r.counts.compatible} compatible · ${r.counts.billing} billing · ${r.counts.upstream} upstream · ${r.counts.docs} docs`, '');

  if (r.routes.length) {
    lines.push('### Routes', '', '| | Method | Path | Kind | Route |', '|---|---|---|---|---|');
    for (const x of r.routes) lines.push(`| ${x.change === 'added' ? 'added' : '**removed**'} | ${x.method} | \`${x.path}\` | ${x.kind} | ${x.vendor}/${x.id} |`);
    lines.push('');
  }
  for (const cls of ['breaking', 'compatible'] as const) section(lines, cls, r.changes.filter((c) => c.class === cls && !/^route (added|removed)/.test(c.message)));

  const billing = r.changes.filter((c) => c.class === 'billing' && !c.message.startsWith('example ') && !c.message.startsWith('new billed route'));
  if (r.prices.length || billing.length) {
    lines.push(`### ${HEADINGS.billing}`, '');
    for (const c of billing) lines.push(`- \`${c.subject}\` — ${c.message}`);
    if (billing.length) lines.push('');
    for (const t of r.prices) {
      lines.push(`**\`${t.subject}\`** — before: ${t.before ?? '(no route)'}; after: ${t.after ?? '(no route)'}`, '');
      if (t.rows.length === 0) {
        lines.push('_No request examples to price: add `request.examples` to the route._', '');
        continue;
      }
      lines.push('| Example request | Before | After | Change |', '|---|---|---|---|');
      for (const row of t.rows) lines.push(`| \`${cell(row.example)}\` | ${cell(row.before)} | ${cell(row.after)} | ${row.delta === '=' ? 'unchanged' : cell(row.delta || '')} |`);
      lines.push('');
    }
  }
  section(lines, 'upstream', r.changes.filter((c) => c.class === 'upstream'));
  section(lines, 'docs', r.changes.filter((c) => c.class === 'docs'));
  if (r.problems.length) {
    lines.push('### Not compared', '');
    for (const p of r.problems) lines.push(`- ${p}`);
    lines.push('');
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

function section(lines: string[], cls: ChangeClass, changes: Change[]): void {
  if (!changes.length) return;
  lines.push(`### ${HEADINGS[cls]}`, '');
  let subject = '';
  for (const c of changes) {
    if (c.subject !== subject) {
      subject = c.subject;
      lines.push(`- \`${subject}\``);
    }
    lines.push(`  - ${c.field ? `\`${c.field}\`: ` : ''}${c.message}`);
  }
  lines.push('');
}

export function renderText(r: DiffReport): string {
  const out: string[] = [`${r.before} → ${r.after}`];
  for (const c of r.changes) out.push(`${c.class.padEnd(10)}  ${c.subject}${c.field ? `  ${c.field}` : ''}  ${c.message}`);
  for (const t of r.prices) for (const row of t.rows) out.push(`${'price'.padEnd(10)}  ${t.subject}  ${row.example}  ${row.before ?? '—'} → ${row.after ?? '—'}  ${row.delta}`);
  out.push(Object.entries(r.counts).map(([k, v]) => `${v} ${k}`).join(', '));
  return `${out.join('\n')}\n`;
}

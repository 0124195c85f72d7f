// What `gateway check` reports: a positioned problem (file:line:col, JSON pointer, message), its
// severity and the check that found it; and the three ways it is printed (text for people,
// JSON for tools, GitHub workflow commands for CI annotations).
import type { Problem } from '../config/yaml-source.ts';

export type Severity = 'error' | 'warning';

/** The checks, in the order their findings are reported (meta-schema first). */
export const CHECKS = [
  'config',
  'meta-schema',
  'route-collision',
  'ref',
  'expression',
  'status-map',
  'example',
  'pricing',
  'fixture',
  'engine',
] as const;
export type CheckName = (typeof CHECKS)[number];

export interface Finding extends Problem {
  severity: Severity;
  check: CheckName;
}

export function finding(p: Problem, check: CheckName, severity: Severity = 'error'): Finding {
  return { ...p, severity, check };
}

export function sortFindings(findings: Finding[]): Finding[] {
  return findings.sort(
    (a, b) =>
      CHECKS.indexOf(a.check) - CHECKS.indexOf(b.check) ||
      a.file.localeCompare(b.file) ||
      a.line - b.line ||
      a.col - b.col ||
      a.pointer.localeCompare(b.pointer),
  );
}

export function formatFinding(f: Finding): string {
  const sev = f.severity === 'warning' ? 'warning: ' : '';
  return `${f.file}:${f.line}:${f.col}  ${f.pointer || '/'}  ${sev}${f.message}  [${f.check}]`;
}

/** GitHub Actions workflow command: shows as an annotation on the line in the PR. */
export function githubAnnotation(f: Finding): string {
  const esc = (s: string) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
  const prop = (s: string) => esc(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
  return `::${f.severity} file=${prop(f.file)},line=${f.line},col=${f.col},title=${prop(`gateway check: ${f.check}`)}::${esc(`${f.pointer || '/'} ${f.message}`)}`;
}

export function escapePointer(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}

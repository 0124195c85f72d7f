// The operations files in ops/ against the gateway's own metrics. promtool validates the alert
// rules, their unit tests (ops/prometheus/alerts.test.yml) and the example scrape config; every
// metric and label the alerts, the Grafana dashboard and the operating guide's catalogue name must be in
// the registry of engine/metrics/metrics.ts, so renaming a metric breaks this file instead of
// silently emptying a panel or an alert; and a real Prometheus scrapes a running gateway, loads
// the rules and answers every dashboard query.
import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { Gateway } from '../../engine/gateway.ts';
import { registry } from '../../engine/metrics/metrics.ts';
import { call, DEMO_KEY, ROOT, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { freePort } from '../helpers/net.ts';

const OPS = join(ROOT, 'ops');
const ALERTS = join(OPS, 'prometheus', 'alerts.yml');
const DASHBOARD = join(OPS, 'grafana', 'model-gateway.json');
// Same variables and paths as test/provision.ts, which installs the package before `npm test`.
const PROMETHEUS = process.env.PROMETHEUS || '/usr/bin/prometheus';
const PROMTOOL = process.env.PROMTOOL || '/usr/bin/promtool';
const INSTALL = 'sudo apt-get update && sudo apt-get install -y --no-install-recommends prometheus';

/** A missing binary fails the test with the command that installs it, never skips it. */
function binary(path: string): string {
  if (!existsSync(path)) throw new Error(`${path} is missing. Install it with:\n\n  ${INSTALL}\n\n(npm test runs test/provision.ts first, which does this itself as root)`);
  return path;
}

function run(bin: string, args: string[]): { status: number | null; out: string } {
  const r = spawnSync(bin, args, { encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}${r.error ?? ''}` };
}

// ---- What the registry serves -----------------------------------------------------------------

interface Family {
  type: string;
  labels: string[];
}
const FAMILIES = new Map<string, Family>(
  registry.getMetricsAsArray().map((m) => [m.name, { type: String(m.type), labels: [...((m as { labelNames?: readonly string[] }).labelNames ?? [])] }]),
);
/** Target labels Prometheus adds to every series it scrapes. */
const TARGET_LABELS = ['job', 'instance'];

/** Every series name a scrape of the gateway yields, with its labels; plus Prometheus's own `up`. */
const SERIES = new Map<string, string[]>([['up', []]]);
for (const [name, f] of FAMILIES) {
  if (f.type === 'histogram') {
    SERIES.set(`${name}_bucket`, [...f.labels, 'le']);
    SERIES.set(`${name}_sum`, f.labels);
    SERIES.set(`${name}_count`, f.labels);
  } else if (f.type === 'summary') {
    SERIES.set(name, [...f.labels, 'quantile']);
    SERIES.set(`${name}_sum`, f.labels);
    SERIES.set(`${name}_count`, f.labels);
  } else SERIES.set(name, f.labels);
}
const GATEWAY_FAMILIES = [...FAMILIES.keys()].filter((n) => n.startsWith('gateway_'));

// ---- Reading PromQL, enough to name its metrics and labels ------------------------------------

const METRIC_NAME = /\b(?:gateway|process|nodejs)_[a-z0-9_]+\b|\bup\b/g;

interface Refs {
  metrics: string[];
  /** Label names in matchers, grouping clauses and label_values(). */
  labels: string[];
}

/** The metrics and labels an expression names; string literals are blanked first. */
function refsOf(expr: string): Refs {
  const text = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""');
  const labels: string[] = [];
  for (const m of text.matchAll(/\{([^}]*)\}/g)) for (const l of m[1]!.matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)) labels.push(l[1]!);
  for (const m of text.matchAll(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g)) labels.push(...m[1]!.split(',').map((s) => s.trim()).filter(Boolean));
  for (const m of text.matchAll(/\blabel_values\s*\([^,]*,\s*(\w+)\s*\)/g)) labels.push(m[1]!);
  // Label names sit in braces and grouping clauses: take metric names from what is left.
  const bare = text.replace(/\{[^}]*\}/g, '').replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  return { metrics: [...new Set(bare.match(METRIC_NAME) ?? [])], labels: [...new Set(labels)] };
}

/** Problems with an expression's names: unknown metrics, labels none of its metrics has. */
function problemsOf(where: string, expr: string, extraLabels: string[] = []): string[] {
  const { metrics, labels } = refsOf(expr);
  const problems: string[] = [];
  if (metrics.length === 0) problems.push(`${where}: names no metric: ${expr}`);
  const known = new Set(TARGET_LABELS);
  for (const m of metrics) {
    const l = SERIES.get(m);
    if (!l) problems.push(`${where}: unknown metric ${m}`);
    else for (const x of l) known.add(x);
  }
  for (const l of [...labels, ...extraLabels]) if (!known.has(l)) problems.push(`${where}: label "${l}" is on none of ${metrics.join(', ')}`);
  return problems;
}

// ---- The files --------------------------------------------------------------------------------

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules = (): Rule[] => (parse(readFileSync(ALERTS, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

interface Target {
  expr: string;
  legendFormat?: string;
  refId: string;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: Target[];
  panels?: Panel[];
  datasource?: { uid?: string };
}
interface Dashboard {
  title: string;
  uid: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: { name: string; type: string; query: unknown; datasource?: { uid?: string } }[] };
}
const dashboard = (): Dashboard => JSON.parse(readFileSync(DASHBOARD, 'utf8'));

/** Every (panel, target) of the dashboard, rows' nested panels included. */
function targets(d: Dashboard): { panel: Panel; target: Target }[] {
  const panels = d.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  return panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel, target })));
}

/** A dashboard expression as Prometheus will get it: Grafana's variables filled in. */
function instantiate(expr: string, rateInterval = '5m'): string {
  return expr.replaceAll('$__rate_interval', rateInterval).replaceAll('$job', 'model-gateway').replaceAll('$instance', '.*');
}

/** The operating guide's "Metrics" section (docs/operating.md), up to the next heading. */
function metricsSection(): string | undefined {
  return readFileSync(join(ROOT, 'docs', 'operating.md'), 'utf8').split(/^## Metrics$/m)[1]?.split(/^##/m)[0];
}

/** The operating guide's "Metrics" catalogue: name → type and labels, as written. */
function readmeCatalogue(): Map<string, Family> {
  const section = metricsSection();
  expect(section, 'docs/operating.md has no "## Metrics" section').to.be.a('string');
  const table = section!.split('| metric | type | labels | meaning |')[1];
  expect(table, 'the Metrics section has no "| metric | type | labels | meaning |" table').to.be.a('string');
  const out = new Map<string, Family>();
  for (const line of table!.split('\n').slice(2)) {
    if (!line.startsWith('|')) break;
    const [name, type, labels] = line.split('|').slice(1, 4).map((c) => c.trim());
    out.set(name!.replaceAll('`', ''), { type: type!, labels: labels === '—' ? [] : labels!.split(',').map((l) => l.trim().replaceAll('`', '')) });
  }
  return out;
}

describe('ops/: Prometheus rules, scrape config and Grafana dashboard', function () {
  this.timeout(30_000);

  describe('promtool', () => {
    let promtool: string;
    let dir: string;
    before(() => {
      promtool = binary(PROMTOOL);
      dir = mkdtempSync(join(tmpdir(), 'gw-ops-'));
    });
    after(() => dir && rmSync(dir, { recursive: true, force: true }));

    it('checks the alerting rules', () => {
      const r = run(promtool, ['check', 'rules', ALERTS]);
      expect(r.status, r.out).to.equal(0);
      expect(r.out).to.match(/SUCCESS: \d+ rules found/);
    });

    it('checks the example prometheus.yml, pointed at a test target, with the rules it loads', () => {
      const original = readFileSync(join(OPS, 'prometheus', 'prometheus.yml'), 'utf8');
      expect(original).to.include("targets: ['127.0.0.1:9464']");
      writeFileSync(join(dir, 'prometheus.yml'), original.replace("targets: ['127.0.0.1:9464']", "targets: ['127.0.0.1:19464']"));
      writeFileSync(join(dir, 'alerts.yml'), readFileSync(ALERTS));
      const r = run(promtool, ['check', 'config', join(dir, 'prometheus.yml')]);
      expect(r.status, r.out).to.equal(0);
      expect(r.out).to.include('SUCCESS: 1 rule files found');
    });

    it('runs the rules\' unit tests: the alerts fire on synthetic series', () => {
      const file = join(OPS, 'prometheus', 'alerts.test.yml');
      const tests = (parse(readFileSync(file, 'utf8')) as { tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[] }).tests;
      const firing = new Set(tests.flatMap((t) => t.alert_rule_test.filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)));
      expect([...firing]).to.include.members(['GatewayUpstreamErrorRateHigh', 'GatewayJobQueueLagging', 'GatewayStoreUnavailable']);
      const r = run(promtool, ['test', 'rules', file]);
      expect(r.status, r.out).to.equal(0);
      expect(r.out).to.include('SUCCESS');
    });

    it('parses every dashboard expression as PromQL', () => {
      const all = targets(dashboard()).map(({ panel, target }) => ({ record: `dashboard:panel_${panel.id}_${target.refId}`, expr: instantiate(target.expr) }));
      writeFileSync(join(dir, 'dashboard-rules.yml'), JSON.stringify({ groups: [{ name: 'dashboard', rules: all }] }));
      const r = run(promtool, ['check', 'rules', join(dir, 'dashboard-rules.yml')]);
      expect(r.status, r.out).to.equal(0);
      expect(r.out).to.include(`SUCCESS: ${all.length} rules found`);
    });
  });

  describe('names held to the registry (engine/metrics/metrics.ts)', () => {
    it('every alert names only existing metrics and labels, and says how bad, what and what to do', () => {
      const problems: string[] = [];
      for (const r of rules()) {
        const where = `alert ${r.alert}`;
        const templated = [...Object.values(r.annotations ?? {}).join(' ').matchAll(/\$labels\.(\w+)/g)].map((m) => m[1]!);
        problems.push(...problemsOf(where, r.expr, templated));
        for (const text of Object.values(r.annotations ?? {})) {
          for (const m of text.replace(/\{\{[^}]*\}\}/g, '').match(METRIC_NAME) ?? []) if (m !== 'up' && !SERIES.has(m) && !FAMILIES.has(m)) problems.push(`${where}: annotation names unknown metric ${m}`);
        }
        if (!r.alert) problems.push(`a rule without an alert name: ${r.expr}`);
        if (r.for === undefined) problems.push(`${where}: no for:`);
        if (!['critical', 'warning', 'info'].includes(r.labels?.severity ?? '')) problems.push(`${where}: severity "${r.labels?.severity}"`);
        for (const a of ['summary', 'description', 'runbook']) if (!r.annotations?.[a]) problems.push(`${where}: no ${a} annotation`);
      }
      expect(problems).to.deep.equal([]);
      expect(rules().length).to.be.at.least(10);
    });

    it('the dashboard parses, and every expression names only existing metrics and labels', () => {
      const d = dashboard();
      expect(d.schemaVersion).to.be.within(36, 41);
      expect(d.templating.list.find((v) => v.name === 'DS_PROMETHEUS')?.type).to.equal('datasource');
      const problems: string[] = [];
      const all = targets(d);
      for (const { panel, target } of all) {
        const legend = [...(target.legendFormat ?? '').matchAll(/\{\{\s*(\w+)\s*\}\}/g)].map((m) => m[1]!);
        problems.push(...problemsOf(`panel "${panel.title}" ${target.refId}`, target.expr, legend));
        if (panel.datasource?.uid !== '${DS_PROMETHEUS}') problems.push(`panel "${panel.title}": datasource is not \${DS_PROMETHEUS}`);
      }
      for (const v of d.templating.list.filter((x) => x.type === 'query')) {
        problems.push(...problemsOf(`variable ${v.name}`, (v.query as { query: string }).query));
      }
      expect(problems).to.deep.equal([]);
      // Every gateway metric is on some panel.
      const used = new Set(all.flatMap(({ target }) => refsOf(target.expr).metrics));
      const unshown = GATEWAY_FAMILIES.filter((n) => ![n, `${n}_bucket`, `${n}_sum`, `${n}_count`].some((s) => used.has(s)));
      expect(unshown, 'gateway metrics on no dashboard panel').to.deep.equal([]);
      const rows = d.panels.filter((p) => p.type === 'row').map((p) => p.title);
      expect(rows).to.deep.equal(['Traffic', 'Errors', 'Upstream', 'Tasks', 'Money and limits', 'Webhooks and job queues', 'Process', 'Readiness and build', 'Result store']);
    });

    it('the operating guide\'s metric catalogue lists exactly the registry\'s gateway_* metrics, with their types and labels', () => {
      const readme = readmeCatalogue();
      expect([...readme.keys()].sort()).to.deep.equal([...GATEWAY_FAMILIES].sort());
      for (const name of GATEWAY_FAMILIES) {
        const f = FAMILIES.get(name)!;
        expect({ name, ...readme.get(name) }).to.deep.equal({ name, type: f.type, labels: f.labels });
      }
    });

    it('the operating guide\'s alert list is the alerts of alerts.yml', () => {
      const readme = metricsSection()!;
      const table = readme.split('| alert | severity | fires when |')[1]!.split('\n\n')[0]!;
      const listed = [...table.matchAll(/`(Gateway\w+)`/g)].map((m) => m[1]!);
      expect(listed.sort()).to.deep.equal(rules().map((r) => r.alert!).sort());
    });

    it('a renamed metric would be caught: unknown names and labels are reported', () => {
      expect(problemsOf('x', 'sum by (vendor) (rate(gateway_upstream_error_total[5m]))')).to.deep.equal(['x: unknown metric gateway_upstream_error_total', 'x: label "vendor" is on none of gateway_upstream_error_total']);
      expect(problemsOf('x', 'histogram_quantile(0.9, sum by (le, vendor) (rate(gateway_task_duration_seconds_bucket{outcome="failed"}[5m])))')).to.deep.equal([]);
      expect(problemsOf('x', 'sum by (tenant) (rate(gateway_http_requests_total{route=~"a|b"}[5m]))')).to.deep.equal(['x: label "tenant" is on none of gateway_http_requests_total']);
    });
  });

  describe('a real Prometheus scraping a gateway', () => {
    let gw: Gateway;
    let prom: ChildProcess | undefined;
    let promUrl: string;
    let dir: string;
    let promLog = '';

    before(async function () {
      const bin = binary(PROMETHEUS);
      gw = await startTestGateway();
      expect(gw.metricsUrl, 'the test gateway has a metrics listener').to.be.a('string');
      const target = new URL(gw.metricsUrl!).host;
      dir = mkdtempSync(join(tmpdir(), 'gw-prometheus-'));
      writeFileSync(
        join(dir, 'prometheus.yml'),
        JSON.stringify({
          global: { scrape_interval: '1s', evaluation_interval: '1s' },
          rule_files: [ALERTS],
          scrape_configs: [{ job_name: 'model-gateway', static_configs: [{ targets: [target] }] }],
        }),
      );
      const port = await freePort();
      promUrl = `http://127.0.0.1:${port}`;
      prom = spawn(bin, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', 'pipe', 'pipe'] });
      prom.stdout!.on('data', (b: Buffer) => (promLog += b));
      prom.stderr!.on('data', (b: Buffer) => (promLog += b));
      await until('Prometheus ready', async () => (await fetch(`${promUrl}/-/ready`)).ok, 10_000);
    });

    after(async () => {
      if (prom && prom.exitCode === null) {
        const exited = new Promise((resolve) => prom!.once('exit', resolve));
        prom.kill('SIGTERM');
        const timer = setTimeout(() => prom!.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      await gw?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    /** Polls `check` until it is true; fails with Prometheus's log when it never is. */
    async function until(what: string, check: () => Promise<boolean>, ms: number): Promise<void> {
      const deadline = Date.now() + ms;
      let last: unknown;
      while (Date.now() < deadline) {
        if (prom?.exitCode !== null && prom?.exitCode !== undefined) throw new Error(`prometheus exited ${prom.exitCode}:\n${promLog}`);
        try {
          if (await check()) return;
        } catch (err) {
          last = err;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error(`${what}: not after ${ms} ms (${String(last ?? 'condition false')})\n${promLog.slice(-3000)}`);
    }

    async function query(q: string): Promise<{ status: string; error?: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } }> {
      return (await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`)).json() as never;
    }
    const scalar = async (q: string) => Number((await query(q)).data.result[0]?.value[1] ?? NaN);

    it('scrapes the gateway: up, requests and created tasks arrive in Prometheus', async () => {
      const created = await call(gw.url, 'POST', '/vendors/provider_d/v1/model_d/generation', { key: DEMO_KEY, body: { prompt: 'a lighthouse at dawn' } });
      expect(created.status, created.text).to.equal(202);
      expect((await call(gw.url, 'GET', '/no/such/route')).status).to.equal(404);
      await waitForTask(gw.url, `/vendors/provider_d/v1/model_d/generation/${created.body.task_info.id}`, DEMO_KEY);

      await until('up{job="model-gateway"} == 1', async () => (await scalar('up{job="model-gateway"}')) === 1, 15_000);
      await until('the 404 and the create scraped', async () => {
        const [notFound, tasks] = await Promise.all([
          scalar('sum(gateway_http_requests_total{job="model-gateway",status_class="4xx",code="2005"})'),
          scalar('sum(gateway_tasks_created_total{job="model-gateway",vendor="provider_d"})'),
        ]);
        return notFound > 0 && tasks > 0;
      }, 15_000);
      const series = await query('gateway_http_requests_total{job="model-gateway"}');
      expect(series.data.result.map((r) => r.metric.status_class)).to.include.members(['2xx', '4xx']);
    });

    it('loads the alert rules and evaluates them without errors', async () => {
      type Group = { rules: { name: string; health: string; lastError?: string }[] };
      let groups: Group[] = [];
      await until('every rule evaluated', async () => {
        groups = ((await (await fetch(`${promUrl}/api/v1/rules`)).json()) as { data: { groups: Group[] } }).data.groups;
        return groups.length > 0 && groups.every((g) => g.rules.every((r) => r.health !== 'unknown'));
      }, 10_000);
      const loaded = groups.flatMap((g) => g.rules);
      expect(loaded.map((r) => r.name).sort()).to.deep.equal(rules().map((r) => r.alert!).sort());
      expect(loaded.filter((r) => r.health !== 'ok')).to.deep.equal([]);
    });

    it('answers every dashboard query', async () => {
      const failed: string[] = [];
      await Promise.all(
        targets(dashboard()).map(async ({ panel, target }) => {
          const r = await query(instantiate(target.expr, '1m'));
          if (r.status !== 'success') failed.push(`${panel.title} ${target.refId}: ${r.error}`);
        }),
      );
      expect(failed).to.deep.equal([]);
      // A panel that shows what the test just did has its series (a rate, once two scrapes hold them).
      const byRoute = targets(dashboard()).find(({ panel }) => panel.title === 'Requests/s by route')!.target;
      await until('the requests-by-route panel shows the test\'s routes', async () => {
        const routes = (await query(instantiate(byRoute.expr, '1m'))).data.result.map((r) => r.metric.route);
        return ['provider_d/image_generation', 'none'].every((r) => routes.includes(r));
      }, 10_000);
    });
  });
});

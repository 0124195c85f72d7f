// `gateway diff`: pairs of descriptors, one change each, and the class each change must get:
// breaking / compatible (API clients), billing (with example prices before and after),
// upstream (mappings), docs. Plus the Markdown a reviewer pastes and the exit code CI gates on.
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { diffSets, gate, type Change, type DiffReport } from '../../engine/tooling/diff.ts';
import { renderMarkdown } from '../../engine/tooling/diff-report.ts';
import { folderSet } from '../../engine/tooling/sources.ts';
import { cleanTempDirs, cli, editDescriptor, tempDir, vendorsDir } from './support.ts';

/** The scaffold as `old`, a copy changed by `edit` as `new`. */
async function pair(edit: (d: any) => void): Promise<{ report: DiffReport; oldDir: string; newDir: string }> {
  const oldDir = vendorsDir();
  const newDir = tempDir();
  cpSync(oldDir, newDir, { recursive: true });
  editDescriptor(newDir, 'acme', edit);
  const report = await diffSets(folderSet(oldDir, 'old'), folderSet(newDir, 'new'));
  return { report, oldDir, newDir };
}

const ROUTE = 'POST /vendors/acme/v1/generation';
const props = (d: any) => d.routes[0].request.schema.properties;
const summary = (c: Change[]) => c.map((x) => `${x.class} ${x.field ?? '-'}: ${x.message}`);

describe('gateway diff', () => {
  after(cleanTempDirs);

  it('identical descriptors: no change, exit 0', async () => {
    const { report } = await pair(() => {});
    expect(report.changes).to.deep.equal([]);
    expect(gate(report, ['breaking'])).to.equal(0);
    expect(renderMarkdown(report)).to.contain('No changes for API clients, billing or upstreams.');
  });

  describe('routes', () => {
    it('a route added is compatible; removed is breaking', async () => {
      const { report } = await pair((d) => {
        d.routes.push({ ...structuredClone(d.routes[0]), id: 'upscale', path: '/v1/upscale', summary: 'Upscale' });
      });
      expect(report.routes).to.deep.equal([{ change: 'added', method: 'POST', path: '/vendors/acme/v1/upscale', kind: 'async', vendor: 'acme', id: 'upscale' }]);
      expect(report.changes.find((c) => c.subject === 'POST /vendors/acme/v1/upscale' && c.class === 'compatible')!.message).to.equal('route added (async)');
      expect(report.counts.breaking).to.equal(0);
      // The same pair the other way round.
      const back = await diffSets(folderSet(vendorsDir(), 'x'), folderSet(vendorsDir(), 'y'));
      expect(back.changes).to.deep.equal([]);
      const { newDir, oldDir } = await pair((d) => {
        d.routes.push({ ...structuredClone(d.routes[0]), id: 'upscale', path: '/v1/upscale' });
      });
      const removed = await diffSets(folderSet(newDir, 'new'), folderSet(oldDir, 'old'));
      expect(removed.routes[0]).to.include({ change: 'removed', path: '/vendors/acme/v1/upscale' });
      expect(removed.changes.filter((c) => c.class === 'breaking').map((c) => c.message)).to.deep.equal([
        'route removed (and GET /vendors/acme/v1/upscale/{task_id}): clients calling it get 404',
      ]);
      expect(gate(removed, ['breaking'])).to.equal(1);
    });
  });

  describe('request schema', () => {
    const cases: [string, (d: any) => void, string[]][] = [
      ['new required field', (d) => {
        props(d).style = { type: 'string' };
        d.routes[0].request.schema.required.push('style');
      }, ['breaking style: new required field']],
      ['an optional field made required', (d) => {
        d.routes[0].request.schema.required.push('seed');
      }, ['breaking seed: is required now']],
      ['narrowed enum', (d) => {
        props(d).size.enum = ['1024*1024', '1280*720'];
      }, ['breaking size: enum narrowed: "720*1280" no longer accepted']],
      ['narrowed range', (d) => {
        props(d).n.maximum = 2;
        props(d).prompt.minLength = 3;
      }, ['breaking prompt: minLength raised from 1 to 3', 'breaking n: maximum lowered from 4 to 2']],
      ['removed field (the schema refuses unknown fields)', (d) => {
        delete props(d).seed;
      }, ['breaking seed: field removed: requests that send it are now refused']],
      ['type change', (d) => {
        props(d).seed = { type: 'string', pattern: '^[0-9]+$' };
      }, ['breaking seed: type changed from integer to string: integer no longer accepted', 'breaking seed: pattern "^[0-9]+$" added', 'compatible seed: minimum 0 removed', 'compatible seed: maximum 2147483647 removed']],
      ['a new pattern on a field', (d) => {
        props(d).prompt.pattern = '^[^<>]*$';
      }, ['breaking prompt: pattern "^[^<>]*$" added']],
      ['unknown fields now accepted', (d) => {
        delete d.routes[0].request.schema.additionalProperties;
      }, ['compatible (body): unknown fields are now accepted']],
      ['a changed default (clients that omit it are affected)', (d) => {
        props(d).n.default = 2;
      }, ['breaking n: default changed from 1 to 2: clients that omit it get another behaviour']],
      ['new optional field', (d) => {
        props(d).negative_prompt = { type: 'string', maxLength: 500 };
      }, ['compatible negative_prompt: new optional field']],
      ['widened enum and range', (d) => {
        props(d).size.enum.push('2048*2048');
        props(d).n.maximum = 8;
      }, ['compatible size: enum widened: "2048*2048" now accepted', 'compatible n: maximum raised from 4 to 8']],
      ['a field made optional', (d) => {
        d.routes[0].request.schema.required = [];
      }, ['compatible prompt: is optional now']],
      ['type widened', (d) => {
        props(d).seed.type = ['integer', 'null'];
      }, ['compatible seed: type widened from integer to integer | null']],
      ['descriptions only', (d) => {
        props(d).prompt.description = 'The picture, in words.';
      }, ['docs prompt: description changed']],
    ];
    for (const [name, edit, expected] of cases) {
      it(name, async () => {
        const { report } = await pair(edit);
        const got = summary(report.changes.filter((c) => c.subject === ROUTE && c.class !== 'billing'));
        expect(got).to.deep.equal(expected);
      });
    }

    it('unknown fields now refused (the same pair, reversed) is breaking', async () => {
      const { oldDir, newDir } = await pair((d) => {
        delete d.routes[0].request.schema.additionalProperties;
      });
      const report = await diffSets(folderSet(newDir, 'open'), folderSet(oldDir, 'closed'));
      expect(summary(report.changes)).to.deep.equal(['breaking (body): unknown fields are now refused']);
    });

    it('a new cross-field rule is breaking', async () => {
      const { report } = await pair((d) => {
        d.routes[0].request.rules = [{ when: 'n > 2 and size = "720*1280"', violation: 'conflict', pointer: '/n', message: 'portrait allows at most 2 images' }];
      });
      expect(summary(report.changes)).to.deep.equal(['breaking /n: new rule refuses requests with 2004: "portrait allows at most 2 images"']);
    });

    it('a $ref and the schema it names are the same schema', async () => {
      const { report } = await pair((d) => {
        const s = d.routes[0].request.schema;
        s.$defs = { prompt: s.properties.prompt };
        s.properties.prompt = { $ref: '#/$defs/prompt' };
      });
      expect(report.changes).to.deep.equal([]);
    });
  });

  describe('responses, upstream, docs', () => {
    it('a result field removed is breaking; a result mapping changed is upstream', async () => {
      const removed = await pair((d) => {
        d.routes[0].result = { thumbnails: 'output.results.url' };
      });
      expect(summary(removed.report.changes)).to.deep.equal(['breaking result.images: result field removed from completed tasks', 'compatible result.thumbnails: result field added to completed tasks']);
      const mapped = await pair((d) => {
        d.routes[0].result.images = 'output.results[0].url';
      });
      expect(summary(mapped.report.changes)).to.deep.equal(['upstream result.images: mapping changed: `output.results.url` → `output.results[0].url`']);
    });

    it('upstream mapping changes (submit body, poll cadence, status map, vendor auth) are upstream, not breaking', async () => {
      const { report } = await pair((d) => {
        d.routes[0].upstream.submit.body = '{ "model": "acme-image-2", "input": { "prompt": prompt } }';
        d.routes[0].upstream.poll.interval_ms = 5000;
        d.routes[0].upstream.poll.status_map.CANCELED = 'processing';
        d.upstream.auth = { scheme: 'header', header: 'X-Api-Key', credential: 'api_key' };
      });
      expect(report.counts).to.include({ breaking: 0, compatible: 0, upstream: 5 });
      const msgs = summary(report.changes);
      // The field is named once, beside the text.
      expect(msgs).to.include('upstream upstream.poll.interval_ms: `2000` → `5000`');
      expect(msgs).to.include('upstream upstream.poll.status_map.CANCELED: `failed` → `processing`');
      expect(msgs.some((m) => m.startsWith('upstream upstream.submit.body: `{ "model": "acme-image-1"'))).to.equal(true);
      expect(report.changes.find((c) => c.field === 'upstream.auth.scheme')).to.include({ subject: 'vendor acme', class: 'upstream' });
    });

    it('the cancel policy: a request changed is upstream; local is upstream; none (a client cancel refused) is breaking', async () => {
      const del = await pair((d) => {
        d.routes[0].upstream.cancel = { method: 'DELETE', path: '/api/v1/generations/{upstream_task_id}' };
      });
      expect(summary(del.report.changes)).to.deep.equal([
        'upstream upstream.cancel.method: `POST` → `DELETE`',
        'upstream upstream.cancel.path: `/api/v1/generations/{upstream_task_id}/cancel` → `/api/v1/generations/{upstream_task_id}`',
      ]);
      const local = await pair((d) => {
        d.routes[0].upstream.cancel = 'local';
      });
      expect(summary(local.report.changes)).to.deep.equal(['upstream upstream.cancel: `POST /api/v1/generations/{upstream_task_id}/cancel` is sent to the provider → cancelled on the gateway only (the provider may still bill)']);
      const none = await pair((d) => {
        d.routes[0].upstream.cancel = 'none';
      });
      expect(none.report.counts).to.include({ breaking: 1 });
      expect(summary(none.report.changes)).to.deep.equal(['breaking upstream.cancel: `POST /api/v1/generations/{upstream_task_id}/cancel` is sent to the provider → a client cancel is refused (409 / 2006)']);
    });

    it('a result fetch and an optional result field are shown', async () => {
      const { report } = await pair((d) => {
        d.routes[0].upstream.result = { path: '/api/v1/generations/{upstream_task_id}/result' };
        d.routes[0].result = { images: { from: 'output.results.url', optional: true } };
      });
      expect(summary(report.changes)).to.deep.equal([
        'breaking result.images: now optional: a completed task may leave it out',
        'upstream upstream.result: added: `{"path":"/api/v1/generations/{upstream_task_id}/result"}`',
      ]);
    });

    it('summary and model_name: docs, and breaking for webhook consumers', async () => {
      const { report } = await pair((d) => {
        d.routes[0].summary = 'Picture generation';
        d.routes[0].model_name = 'acme-image-2';
      });
      expect(summary(report.changes)).to.deep.equal([
        'breaking -: model_name in task webhooks changed from "acme-image-1" to "acme-image-2"',
        'docs -: summary changed',
      ]);
    });
  });

  describe('billing', () => {
    it('a price change shows each example before and after', async () => {
      const { report } = await pair((d) => {
        d.routes[0].pricing.unit_price.table['1024*1024'] = '0.05';
      });
      expect(report.counts).to.include({ breaking: 0, billing: 2 });
      expect(summary(report.changes.filter((c) => c.class === 'billing'))).to.deep.equal([
        'billing pricing.unit_price.table.1024*1024: `0.04` → `0.05`',
        'billing -: example {"prompt":"a red bicycle against a white wall"}: 0.04 USD (4.00 credits) = 1 image x 0.04 USD (1024*1024) → 0.05 USD (5.00 credits) = 1 image x 0.05 USD (1024*1024) (+25%)',
      ]);
      const t = report.prices[0]!;
      expect(t.rows.map((r) => [r.beforeMilli, r.afterMilli, r.delta])).to.deep.equal([[4000, 5000, '+25%'], [20000, 20000, '=']]);
      expect(gate(report, ['breaking'])).to.equal(0);
      expect(gate(report, ['billing'])).to.equal(1);
    });

    it('a changed default moves the price of examples that omit the field', async () => {
      const { report } = await pair((d) => {
        props(d).n.default = 2;
      });
      expect(report.prices[0]!.rows.map((r) => r.delta)).to.deep.equal(['+100%', '=']);
    });

    it('an example the new schema refuses is shown as refused', async () => {
      const { report } = await pair((d) => {
        props(d).n.maximum = 2;
      });
      const row = report.prices[0]!.rows[1]!;
      expect(row.before).to.match(/^0.20 USD/);
      expect(row.after).to.equal('refused (2003)');
    });
  });

  describe('Markdown and the CLI', () => {
    it('renders a PR comment with a verdict, the route table, the classes and the price table', async () => {
      const { report } = await pair((d) => {
        delete props(d).seed;
        props(d).negative_prompt = { type: 'string' };
        d.routes[0].pricing.unit_price.table['1280*720'] = '0.06';
        d.routes[0].upstream.poll.interval_ms = 3000;
        d.routes.push({ ...structuredClone(d.routes[0]), id: 'upscale', path: '/v1/upscale' });
      });
      const md = renderMarkdown(report);
      expect(md).to.match(/^## Gateway descriptors: `old` → `new`\n\n\*\*1 breaking change\(s\)\*\* · 2 compatible · \d+ billing · 1 upstream · 0 docs/);
      expect(md).to.contain('| added | POST | `/vendors/acme/v1/upscale` | async | acme/upscale |');
      expect(md).to.contain('### Breaking changes for API clients\n\n- `POST /vendors/acme/v1/generation`\n  - `seed`: field removed: requests that send it are now refused');
      expect(md).to.contain('### Compatible changes for API clients');
      expect(md).to.contain('| Example request | Before | After | Change |');
      expect(md).to.contain('| `{"prompt":"a red bicycle, studio light","size":"1280*720","n":4}` | 0.20 USD (20.00 credits) = 4 image x 0.05 USD (1280*720) | 0.24 USD (24.00 credits) = 4 image x 0.06 USD (1280*720) | +20% |');
      expect(md).to.contain('### Upstream mapping changes');
    });

    it('exits 1 on breaking changes, 0 on compatible ones, and gates billing with --fail-on', async () => {
      const breaking = await pair((d) => {
        props(d).n.maximum = 2;
      });
      const r1 = cli(['diff', breaking.oldDir, breaking.newDir]);
      expect(r1.status).to.equal(1);
      expect(r1.stdout).to.contain('`n`: maximum lowered from 4 to 2');
      const compatible = await pair((d) => {
        props(d).n.maximum = 8;
      });
      expect(cli(['diff', compatible.oldDir, compatible.newDir]).status).to.equal(0);
      const priced = await pair((d) => {
        d.routes[0].pricing.unit_price.table['1024*1024'] = '0.03';
      });
      expect(cli(['diff', priced.oldDir, priced.newDir]).status).to.equal(0);
      expect(cli(['diff', priced.oldDir, priced.newDir, '--fail-on', 'breaking,billing']).status).to.equal(1);
      const json = cli(['diff', priced.oldDir, priced.newDir, '--format', 'json', '--fail-on', 'none']);
      expect(json.status).to.equal(0);
      expect(JSON.parse(json.stdout).prices[0].rows[0]).to.include({ beforeMilli: 4000, afterMilli: 3000, delta: '-25%' });
      expect(cli(['diff', priced.oldDir, priced.newDir, '--fail-on', 'nonsense']).status).to.equal(2);
    });

    it('compares a git ref with the working tree', () => {
      const repo = tempDir('gw-diff-git-');
      const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args], { cwd: repo, stdio: 'pipe' });
      git('init', '-q');
      mkdirSync(join(repo, 'vendors'));
      cpSync(vendorsDir(), join(repo, 'vendors'), { recursive: true });
      git('add', '.');
      git('commit', '-q', '-m', 'acme');
      editDescriptor(join(repo, 'vendors'), 'acme', (d) => {
        d.routes[0].request.schema.required.push('size');
      });
      rmSync(join(repo, 'vendors', 'acme', 'fixtures', 'generation', 'queued.json'));
      const r = cli(['diff', 'HEAD'], { cwd: repo });
      expect(r.stdout).to.match(/^## Gateway descriptors: `HEAD` → `working tree`/);
      expect(r.stdout).to.contain('`size`: is required now');
      expect(r.status).to.equal(1);
      expect(cli(['diff', 'no-such-ref'], { cwd: repo }).stderr).to.contain('"no-such-ref" is neither a folder nor a git ref');
    });
  });
});

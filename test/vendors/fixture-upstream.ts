// A real upstream HTTP server for contract tests that answers with a vendor's own fixtures
// (vendors/<vendor>/fixtures/<route>/*.json): submit → `created`; polls → `queued`, `running`,
// then `succeeded` — or `failed` when the upstream body contains FAILME. A body containing
// HOLDME stays `running` until release(). replyOnce() makes the next submit answer something
// else (a refusal). Every request is recorded with its headers and parsed body.
import { mkdtempSync, readFileSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeUpstream, json, type Seen } from '../helpers/upstream.ts';
import { ROOT } from '../helpers/gateway.ts';
import { fillFixture, fixtureVars } from '../../engine/sandbox/fixtures.ts';

export const FILES = 'https://files.example.com';

export function loadFixtures(vendor: string, routeId: string): Map<string, unknown> {
  const dir = join(ROOT, 'vendors', vendor, 'fixtures', routeId);
  return new Map(readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => [f.slice(0, -5), JSON.parse(readFileSync(join(dir, f), 'utf8'))]));
}

/** Fixture text with its placeholders filled, as the sandbox does. */
export const fill = fillFixture;

export function vars(upstreamId: string, extra: Record<string, string> = {}): Record<string, string | number> {
  return fixtureVars(upstreamId, '', Date.now(), FILES, extra);
}

interface UpTask {
  fixtures: Map<string, unknown>;
  polls: number;
  outcome: 'succeeded' | 'failed';
  held: boolean;
}

export class FixtureUpstream {
  readonly up = new FakeUpstream();
  readonly tasks = new Map<string, UpTask>();
  private readonly once = new Map<string, { status: number; body: unknown }>();
  private seq = 0;

  /** Serve one route: submit at `prefix + submitPath`, polls matching `prefix + pollPath` ({id}). */
  route(prefix: string, vendor: string, routeId: string, submitPath: string, pollPath: string): this {
    const fixtures = loadFixtures(vendor, routeId);
    const submit = `${prefix}${submitPath}`;
    this.up.on('POST', submit, (req, res) => {
      const reply = this.once.get(submit);
      if (reply) {
        this.once.delete(submit);
        return json(res, reply.status, reply.body);
      }
      const id = `up-${vendor}-${++this.seq}`;
      const text = JSON.stringify(req.body);
      this.tasks.set(id, { fixtures, polls: 0, outcome: text.includes('FAILME') ? 'failed' : 'succeeded', held: text.includes('HOLDME') });
      json(res, 200, fill(fixtures.get('created'), vars(id)));
    });
    const pattern = new RegExp(`^${`${prefix}${pollPath}`.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace('\\{id\\}', '([^/]+)').replace('{id}', '([^/]+)')}$`);
    this.up.on('GET', pattern, (req, res) => {
      const id = decodeURIComponent(pattern.exec(req.path)![1]!);
      const t = this.tasks.get(id);
      if (!t) return json(res, 404, { error: 'unknown task' });
      t.polls++;
      const name = t.polls === 1 && t.fixtures.has('queued') ? 'queued' : t.held || t.polls < 3 ? 'running' : t.outcome;
      json(res, 200, fill(t.fixtures.get(name), vars(id)));
    });
    return this;
  }

  replyOnce(path: string, status: number, body: unknown): void {
    this.once.set(path, { status, body });
  }

  release(upstreamId: string): void {
    const t = this.tasks.get(upstreamId);
    if (t) t.held = false;
  }

  /** The submits seen at this path. */
  submits(path: string): Seen[] {
    return this.up.seen.filter((s) => s.method === 'POST' && s.path === path);
  }

  get url(): string {
    return this.up.url;
  }

  async start(): Promise<this> {
    await this.up.start();
    return this;
  }

  close(): Promise<void> {
    return this.up.close();
  }
}

/** A vendors directory holding only these vendors (their descriptors and fixtures, linked). */
export function vendorsDirWith(vendors: readonly string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-vendors-'));
  for (const v of vendors) {
    symlinkSync(join(ROOT, 'vendors', `${v}.yaml`), join(dir, `${v}.yaml`));
    symlinkSync(join(ROOT, 'vendors', v), join(dir, v));
  }
  return dir;
}

// The start that ships: `npm start` (and the `gateway` bin) runs the engine compiled into dist/,
// built when the sources changed (engine/cli/build.mjs), and never loads Node's type stripper,
// whose WebAssembly memory would stay in the process (docs/performance.md, *The shipped start
// runs compiled JavaScript*). The other tests run the TypeScript sources; this one runs the
// artifact, answers a request with it, and checks that an edited source is built again.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../helpers/gateway.ts';
import { recordedServe } from '../helpers/recorded-serve.ts';

const DEMO = 'gw_test_sandbox_demo_key_000000000000';
const build = (await import(pathToFileURL(join(ROOT, 'engine/cli/build.mjs')).href)) as { isFresh(): Promise<boolean>; DIST: string };

describe('the shipped start', function () {
  this.timeout(60_000);

  it('npm start and the bin run engine/cli/gateway.mjs; dist/ is not committed', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string>; bin: Record<string, string> };
    expect(pkg.scripts.start).to.equal('node engine/cli/gateway.mjs serve');
    expect(pkg.bin.gateway).to.equal('engine/cli/gateway.mjs');
    expect(pkg.scripts.prepare).to.equal('node engine/cli/build.mjs');
    expect(readFileSync(join(ROOT, '.gitignore'), 'utf8').split('\n')).to.include('dist/');
  });

  it('serves the shipped config from dist/, without a TypeScript file or the type stripper', async () => {
    // `npm start`'s command, run by the Node that npm runs it with.
    const gw = await recordedServe('engine/cli/gateway.mjs');
    try {
      const r = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${DEMO}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }),
      });
      expect(r.status, await r.clone().text()).to.equal(200);
      expect(((await r.json()) as { choices: unknown[] }).choices).to.have.length(1);
      const { modules, builtins } = await gw.loaded();
      expect(modules).to.include(pathToFileURL(join(build.DIST, 'gateway.js')).href);
      expect(modules).to.include(pathToFileURL(join(build.DIST, 'cli/main.js')).href);
      expect(modules.filter((u) => /\.[mc]?ts$/.test(u))).to.deep.equal([]);
      expect(builtins.filter((b) => b.includes('amaro'))).to.deep.equal([]);
      expect(gw.stderr()).to.not.include('running the TypeScript sources');
    } finally {
      await gw.stop();
    }
  });

  // V8's worker pool sized to the CPUs the process may run on (engine/cli/v8-pool.mjs): pinned to
  // one core, one worker where Node starts four; by replacing the process, not by a second one.
  it('serve sizes V8\'s worker pool to its CPUs in the same process, unless NODE_OPTIONS sizes it', async function () {
    if (process.platform !== 'linux' || spawnSync('taskset', ['-c', '0', 'true']).status !== 0) this.skip();
    this.timeout(120_000); // two starts on one core, each allowed 40 s on a loaded 2-core CI
    const comm = (pid: number, t: string) => { try { return readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim(); } catch { return ''; } }; // a thread gone meanwhile
    const workers = (pid: number) => readdirSync(`/proc/${pid}/task`).filter((t) => comm(pid, t) === 'V8Worker').length;
    const pinned = await recordedServe('engine/cli/gateway.mjs', { pin: '0' });
    try {
      expect(workers(pinned.pid)).to.equal(1);
      expect(readFileSync(`/proc/${pinned.pid}/cmdline`, 'utf8').split('\0')).to.include('--v8-pool-size=1');
      expect((await fetch(`${pinned.url}/healthz`)).status).to.equal(200);
      // execve's ExperimentalWarning is emitted on the next tick, which the old image never reaches.
      expect(pinned.stderr()).to.not.include('Warning');
    } finally {
      await pinned.stop();
    }
    const chosen = await recordedServe('engine/cli/gateway.mjs', { pin: '0', env: { NODE_OPTIONS: '--v8-pool-size=3' } });
    try {
      expect(workers(chosen.pid)).to.equal(3);
      expect(readFileSync(`/proc/${chosen.pid}/cmdline`, 'utf8')).to.not.include('--v8-pool-size');
    } finally {
      await chosen.stop();
    }
  });

  it('builds dist/ again when a source changed, and not when only its time did', async () => {
    const gateway = (...args: string[]) => spawnSync(process.execPath, [join(ROOT, 'engine/cli/gateway.mjs'), ...args], { cwd: ROOT, encoding: 'utf8', timeout: 50_000 });
    const stamp = join(build.DIST, '.sources');
    expect(gateway('help').status).to.equal(0);
    // Only the time moved (a checkout, a copy): the content matches the last build, so no build.
    const source = join(ROOT, 'engine/cli/flushed.ts');
    const later = new Date(Math.max(Date.now(), statSync(source).mtimeMs) + 2000);
    utimesSync(source, later, later);
    const built = statSync(join(build.DIST, 'cli/flushed.js')).mtimeMs;
    expect(await build.isFresh()).to.equal(true);
    expect(statSync(join(build.DIST, 'cli/flushed.js')).mtimeMs).to.equal(built);
    // A source added, then removed: built into dist/, then its output pruned.
    const probe = join(ROOT, 'engine/cli/build-probe.ts');
    try {
      writeFileSync(probe, 'export const probe: number = 1;\n');
      expect(await build.isFresh()).to.equal(false);
      const help = gateway('help');
      expect(help.status, help.stderr).to.equal(0);
      expect(help.stdout).to.match(/^usage: gateway/);
      expect(readFileSync(join(build.DIST, 'cli/build-probe.js'), 'utf8')).to.include('export const probe = 1;');
      expect(await build.isFresh()).to.equal(true);
    } finally {
      rmSync(probe, { force: true });
    }
    expect(gateway('help').status).to.equal(0);
    expect(existsSync(join(build.DIST, 'cli/build-probe.js'))).to.equal(false);
    expect(await build.isFresh()).to.equal(true);
    expect(statSync(stamp).isFile()).to.equal(true);
  });
});

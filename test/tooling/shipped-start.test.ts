// The start that ships: `npm start` (and the `gateway` bin) runs the engine compiled into dist/,
// built when the sources changed (engine/cli/build.mjs), and never loads Node's type stripper,
// whose WebAssembly memory would stay in the process (docs/performance.md, *The shipped start
// runs compiled JavaScript*). The other tests run the TypeScript sources; this one runs the
// artifact, answers a request with it, and checks that an edited source is built again.
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../helpers/gateway.ts';

/** Records every module the process loads; prints them and Node's own on SIGUSR2. */
const RECORDER = `
import { registerHooks } from 'node:module';
const loaded = new Set();
registerHooks({ load(url, context, next) { loaded.add(url); return next(url, context); } });
process.on('SIGUSR2', () => console.error('LOADED ' + JSON.stringify({ modules: [...loaded], builtins: process.moduleLoadList })));
`;

const DEMO = 'gw_test_sandbox_demo_key_000000000000';
const build = (await import(pathToFileURL(join(ROOT, 'engine/cli/build.mjs')).href)) as { isFresh(): boolean; DIST: string };

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
    const recorder = join(mkdtempSync(join(tmpdir(), 'gw-shipped-')), 'recorder.mjs');
    writeFileSync(recorder, RECORDER);
    // `npm start`'s command, run by the Node that npm runs it with.
    const child = spawn(process.execPath, ['--import', recorder, join(ROOT, 'engine/cli/gateway.mjs'), 'serve'], {
      cwd: ROOT, env: { ...process.env, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    try {
      for (const deadline = Date.now() + 40_000; !out.includes('"gateway listening"'); await new Promise((r) => setTimeout(r, 50))) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`gateway did not start: ${out}${err}`);
      }
      const { url } = JSON.parse(out.split('\n').find((l) => l.includes('"gateway listening"'))!) as { url: string };
      const r = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${DEMO}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }),
      });
      expect(r.status, await r.clone().text()).to.equal(200);
      expect(((await r.json()) as { choices: unknown[] }).choices).to.have.length(1);
      child.kill('SIGUSR2');
      for (const deadline = Date.now() + 5000; !err.includes('LOADED '); await new Promise((r) => setTimeout(r, 20))) {
        if (Date.now() > deadline) throw new Error(`no module list: ${err}`);
      }
      const { modules, builtins } = JSON.parse(err.slice(err.indexOf('LOADED ') + 7).split('\n')[0]!) as { modules: string[]; builtins: string[] };
      expect(modules).to.include(pathToFileURL(join(build.DIST, 'gateway.js')).href);
      expect(modules).to.include(pathToFileURL(join(build.DIST, 'cli/main.js')).href);
      expect(modules.filter((u) => /\.[mc]?ts$/.test(u))).to.deep.equal([]);
      expect(builtins.filter((b) => b.includes('amaro'))).to.deep.equal([]);
      expect(err).to.not.include('running the TypeScript sources');
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });

  it('builds dist/ again when a source changed', () => {
    const source = join(ROOT, 'engine/cli/flushed.ts');
    const stamp = join(build.DIST, '.sources');
    const later = new Date(Math.max(Date.now(), statSync(source).mtimeMs + 1000));
    utimesSync(source, later, later); // as an edit would
    expect(build.isFresh()).to.equal(false);
    const help = spawnSync(process.execPath, [join(ROOT, 'engine/cli/gateway.mjs'), 'help'], { cwd: ROOT, encoding: 'utf8', timeout: 50_000 });
    expect(help.status, help.stderr).to.equal(0);
    expect(help.stdout).to.match(/^usage: gateway/);
    expect(build.isFresh()).to.equal(true);
    expect(statSync(stamp).mtimeMs).to.be.at.least(later.getTime() - 1000);
  });
});

// What a fresh `gateway serve` holds before any request: none of what only the operator commands,
// the OpenAPI document, a webhook delivery or a large media body need (each is imported by its
// first use), and not Node's own undici (pulled in by an ESM import of node:http; see
// engine/util/node-http.ts). Every module is held for the life of the process, so one imported
// at start for nothing is memory the idle gateway keeps (docs/performance.md, Memory).
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers/gateway.ts';

/** Records every module the process loads; prints them (and Node's own modules) on SIGUSR2. */
const RECORDER = `
import { registerHooks } from 'node:module';
const loaded = new Set();
registerHooks({ load(url, context, next) { loaded.add(url); return next(url, context); } });
process.on('SIGUSR2', () => console.error('LOADED ' + JSON.stringify({ modules: [...loaded], builtins: process.moduleLoadList })));
`;

describe('an idle gateway holds only what serving needs', function () {
  this.timeout(30_000);

  it('`gateway serve` on the shipped config loads no tooling, OpenAPI builder, Piscina, semantic-conventions table or Node undici', async () => {
    const recorder = join(mkdtempSync(join(tmpdir(), 'gw-idle-')), 'recorder.mjs');
    writeFileSync(recorder, RECORDER);
    const child = spawn(process.execPath, ['--import', recorder, join(ROOT, 'engine/cli/main.ts'), 'serve'], {
      cwd: ROOT, env: { ...process.env, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    try {
      for (const deadline = Date.now() + 20_000; !out.includes('"gateway listening"'); await new Promise((r) => setTimeout(r, 50))) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`gateway did not start: ${out}${err}`);
      }
      child.kill('SIGUSR2');
      for (const deadline = Date.now() + 5000; !err.includes('LOADED '); await new Promise((r) => setTimeout(r, 20))) {
        if (Date.now() > deadline) throw new Error(`no module list: ${err}`);
      }
      const { modules, builtins } = JSON.parse(err.slice(err.indexOf('LOADED ') + 7).split('\n')[0]!) as { modules: string[]; builtins: string[] };
      const engine = modules.filter((u) => u.includes('/engine/')).map((u) => u.slice(u.indexOf('/engine/') + 1));
      expect(engine, 'the gateway itself was recorded').to.include('engine/gateway.ts');
      expect(engine.filter((f) => f.startsWith('engine/tooling/') || f.startsWith('engine/docs/'))).to.deep.equal([]);
      expect(engine.filter((f) => f.startsWith('engine/cli/')).sort()).to.deep.equal(['engine/cli/flushed.ts', 'engine/cli/help.ts', 'engine/cli/main.ts', 'engine/cli/serve.ts', 'engine/cli/usage.ts']);
      expect(modules.filter((u) => /node_modules\/(piscina|@opentelemetry\/semantic-conventions)\//.test(u))).to.deep.equal([]);
      expect(builtins.filter((b) => b.includes('undici'))).to.deep.equal([]);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});

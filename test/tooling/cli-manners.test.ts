// CLI manners (issue 31): `--help` on every command and sub-command, check's counts (descriptors
// read, enabled, disabled, routes), and the installed `gateway` bin running on a machine whose own
// Node is older than the gateway's (engine/cli/gateway.mjs re-runs it on the `node` package's).
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { helpFor, USAGE } from '../../engine/cli/help.ts';
import { runChecks } from '../../engine/tooling/checks.ts';
import { cleanTempDirs, cli, ROOT, vendorsDir } from './support.ts';

const COMMANDS = [
  'serve', 'check', 'routes', 'diff', 'openapi', 'new-vendor',
  'tenant', 'tenant create', 'tenant list',
  'key', 'key create', 'key list', 'key revoke',
  'wallet', 'wallet topup', 'wallet show', 'wallet ledger', 'wallet threshold',
  'limits', 'limits show', 'limits set',
];

describe('CLI manners', () => {
  after(cleanTempDirs);

  it('every command and sub-command has its own usage', () => {
    for (const c of COMMANDS) {
      const [command, ...sub] = c.split(' ');
      const help = helpFor(USAGE, command!, [...sub, '--help']);
      expect(help, c).to.be.a('string');
      const entries = help!.split('\n').filter((l) => /^ {2}[a-z]/.test(l));
      expect(entries.length, c).to.be.greaterThan(0);
      for (const e of entries) expect(e.trim().startsWith(c), `${c}: ${e}`).to.equal(true);
    }
    expect(helpFor(USAGE, 'nope', [])).to.equal(undefined);
  });

  it('--help answers 0 without doing anything (an admin command needs no token for it), as does `help <command>`', () => {
    const env = { GATEWAY_ADMIN_TOKEN: '' };
    for (const args of [['key', 'create', '--help'], ['check', '-h'], ['help', 'wallet', 'topup']]) {
      const r = cli(args, { env });
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).to.equal(0);
      expect(r.stdout).to.match(new RegExp(`^usage: gateway\\n  ${args.filter((a) => !a.startsWith('-') && a !== 'help').join(' ')}`));
    }
  });

  it("check counts the descriptors read, enabled and disabled, and the routes", async () => {
    const cfg = parse(readFileSync(join(ROOT, 'config.yaml'), 'utf8'));
    const files = readdirSync(join(ROOT, 'vendors')).filter((f) => f.endsWith('.yaml'));
    const r = cli(['check']);
    const m = /in (\d+) descriptor\(s\) read \((\d+) enabled, (\d+) disabled\), (\d+) route\(s\)/.exec(r.stdout + r.stderr)!;
    expect(m, r.stdout + r.stderr).to.not.equal(null);
    expect(Number(m[1])).to.equal(files.length);
    expect(Number(m[2])).to.equal(cfg.vendors.enabled.length);
    expect(Number(m[3])).to.equal(files.length - cfg.vendors.enabled.length);
    // A descriptor the meta-schema refuses was still read.
    const dir = vendorsDir([{ name: 'acme' }, { name: 'zeta' }]);
    writeFileSync(join(dir, 'zeta.yaml'), 'format: 1\nvendor: zeta\n');
    const report = await runChecks({ paths: [dir] });
    expect(report).to.include({ vendors: 2, enabled: 2, disabled: 0, routes: 1 });
  });

  it('the installed bin runs on an older system Node without npm engine warnings', function () {
    const system = ['/usr/bin/node', '/usr/local/bin/node'].find(existsSync);
    const version = system ? spawnSync(system, ['--version'], { encoding: 'utf8' }).stdout.trim() : '';
    if (!system || Number(version.slice(1).split('.')[0]) >= 23) this.skip(); // no older Node on this machine
    const shim = spawnSync(system!, [join(ROOT, 'engine/cli/gateway.mjs'), 'check'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(shim.status, shim.stderr).to.equal(0);
    expect(shim.stdout).to.match(/^ok: /m);
    const npx = spawnSync('npx', ['gateway', '--help'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, PATH: `${join(system!, '..')}:${process.env.PATH}` } });
    expect(npx.status, npx.stderr).to.equal(0);
    expect(npx.stderr).to.not.match(/EBADENGINE|npm warn/);
    expect(npx.stdout).to.match(/^usage: gateway/);
  });
});

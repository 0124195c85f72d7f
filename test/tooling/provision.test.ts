// The README's test command on a machine without the system programs the suite needs: it stops
// at once with the exact command to run (as root it would install them with apt-get instead).
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers/gateway.ts';

const SCRIPT = `${ROOT}test/provision.ts`;

/** Runs provision.ts as a user who cannot install (as root, the script would call apt-get). */
function runUnprivileged(vars: Record<string, string>) {
  const env = { ...process.env, ...vars };
  const script = [process.execPath, SCRIPT];
  const assignments = Object.entries(vars).map(([k, v]) => `${k}=${v}`);
  const [cmd, ...args] = process.getuid?.() === 0 ? ['runuser', '-u', 'nobody', '--', 'env', ...assignments, ...script] : script;
  const started = Date.now();
  const r = spawnSync(cmd!, args, { env, encoding: 'utf8', timeout: 20_000 });
  return { ...r, ms: Date.now() - started };
}

describe('npm test provisioning (test/provision.ts)', () => {
  it('stops at once, with the exact install command, when redis-server is missing and it cannot install', () => {
    const r = runUnprivileged({ REDIS_SERVER: '/nonexistent/redis-server' });
    expect(r.status, r.stderr).to.equal(1);
    expect(r.stderr).to.include('redis-server is missing');
    expect(r.stderr).to.include('sudo apt-get update && sudo apt-get install -y --no-install-recommends redis-server\n');
    expect(r.ms).to.be.below(10_000);
  });

  it('names the prometheus package once when prometheus and promtool are missing', () => {
    const r = runUnprivileged({ PROMETHEUS: '/nonexistent/prometheus', PROMTOOL: '/nonexistent/promtool' });
    expect(r.status, r.stderr).to.equal(1);
    expect(r.stderr).to.include('prometheus is missing');
    expect(r.stderr).to.include('promtool is missing');
    expect(r.stderr).to.include('sudo apt-get update && sudo apt-get install -y --no-install-recommends prometheus\n');
  });

  it('names the chromium package when the browser of the console tests is missing', () => {
    const r = runUnprivileged({ CHROMIUM: '/nonexistent/chromium' });
    expect(r.status, r.stderr).to.equal(1);
    expect(r.stderr).to.include('chromium is missing');
    expect(r.stderr).to.include('sudo apt-get update && sudo apt-get install -y --no-install-recommends chromium\n');
  });

  it('lists every missing package in one command', () => {
    const r = runUnprivileged({ REDIS_SERVER: '/nonexistent/redis-server', PROMTOOL: '/nonexistent/promtool' });
    expect(r.status, r.stderr).to.equal(1);
    expect(r.stderr).to.include('sudo apt-get update && sudo apt-get install -y --no-install-recommends redis-server prometheus\n');
  });

  it('as root: installs with apt-get, then stops and disables the service the prometheus package starts', function () {
    if (process.getuid?.() !== 0) this.skip(); // the unprivileged path is the tests above
    // Stand-ins on PATH record what would run: apt-get "installs" by creating the binaries.
    const dir = mkdtempSync(join(tmpdir(), 'gw-provision-'));
    try {
      const log = join(dir, 'calls.log');
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      const fake = (name: string, body = '') => {
        writeFileSync(join(bin, name), `#!/bin/sh\necho "${name} $*" >> "${log}"\n${body}\nexit 0\n`);
        chmodSync(join(bin, name), 0o755);
      };
      fake('apt-get', 'case "$1" in install) touch "$PROMETHEUS" "$PROMTOOL";; esac');
      for (const name of ['systemctl', 'service', 'update-rc.d']) fake(name);
      const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, PROMETHEUS: join(dir, 'prometheus'), PROMTOOL: join(dir, 'promtool') };
      const r = spawnSync(process.execPath, [SCRIPT], { env, encoding: 'utf8', timeout: 20_000 });
      expect(r.status, r.stderr).to.equal(0);
      const calls = readFileSync(log, 'utf8').trim().split('\n');
      expect(calls).to.include('apt-get install -y -qq --no-install-recommends prometheus');
      const stops = existsSync('/run/systemd/system')
        ? ['systemctl disable --now prometheus']
        : ['systemctl disable prometheus', 'service prometheus stop', 'update-rc.d prometheus disable'];
      expect(calls.slice(calls.indexOf('apt-get install -y -qq --no-install-recommends prometheus') + 1)).to.deep.equal(stops);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('passes silently when everything is installed', () => {
    const r = spawnSync(process.execPath, [SCRIPT], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stderr).to.equal('');
  });
});

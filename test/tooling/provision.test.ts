// The README's test command on a machine without the system programs the suite needs: it stops
// at once with the exact command to run (as root it would install them with apt-get instead).
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { ROOT } from '../helpers/gateway.ts';

describe('npm test provisioning (test/provision.ts)', () => {
  it('stops at once, with the exact install command, when redis-server is missing and it cannot install', () => {
    const env = { ...process.env, REDIS_SERVER: '/nonexistent/redis-server' };
    const script = [process.execPath, `${ROOT}test/provision.ts`];
    // Run as a user who cannot install (as root, the script would call apt-get).
    const [cmd, ...args] = process.getuid?.() === 0 ? ['runuser', '-u', 'nobody', '--', 'env', `REDIS_SERVER=${env.REDIS_SERVER}`, ...script] : script;
    const started = Date.now();
    const r = spawnSync(cmd!, args, { env, encoding: 'utf8', timeout: 20_000 });
    expect(r.status, r.stderr).to.equal(1);
    expect(r.stderr).to.include('redis-server is missing');
    expect(r.stderr).to.include('sudo apt-get update && sudo apt-get install -y redis-server');
    expect(Date.now() - started).to.be.below(10_000);
  });

  it('passes silently when everything is installed', () => {
    const r = spawnSync(process.execPath, [`${ROOT}test/provision.ts`], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stderr).to.equal('');
  });
});

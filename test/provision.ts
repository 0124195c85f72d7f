// Runs before `npm test` (the `pretest` script): the suite needs system programs that npm cannot
// install. As root on Debian/Ubuntu they are installed with apt-get; otherwise the run stops at
// once with the exact command to run, instead of failing test by test minutes later.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

interface SystemNeed {
  /** The program the tests start. */
  binary: string;
  /** Where the tests look for it first (an environment variable naming another path wins). */
  path: string;
  env?: string;
  /** The Debian package that provides it. */
  debian: string;
  /** A daemon the package enables and may start on install; the tests start their own. */
  service?: string;
  why: string;
}

const NEEDS: SystemNeed[] = [
  { binary: 'redis-server', path: '/usr/bin/redis-server', env: 'REDIS_SERVER', debian: 'redis-server', why: 'the Redis half of the suite starts its own redis-server' },
  { binary: 'prometheus', path: '/usr/bin/prometheus', env: 'PROMETHEUS', debian: 'prometheus', service: 'prometheus', why: 'test/ops/prometheus.test.ts has a real Prometheus scrape a gateway' },
  { binary: 'promtool', path: '/usr/bin/promtool', env: 'PROMTOOL', debian: 'prometheus', why: 'test/ops/prometheus.test.ts checks ops/prometheus/ with promtool' },
  { binary: 'chromium', path: '/usr/bin/chromium', env: 'CHROMIUM', debian: 'chromium', why: 'test/console/ drives the console in a real browser (playwright-core)' },
];

function present(n: SystemNeed): boolean {
  if (n.env && process.env[n.env]) return existsSync(process.env[n.env]!);
  return existsSync(n.path);
}

const missing = NEEDS.filter((n) => !present(n));
if (missing.length > 0) {
  const packages = [...new Set(missing.map((n) => n.debian))];
  // Recommends would add daemons nothing here uses (prometheus recommends node-exporter).
  const install = `apt-get install -y --no-install-recommends ${packages.join(' ')}`;
  const canInstall = process.getuid?.() === 0 && spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0;
  for (const n of missing) console.error(`provision: ${n.binary} is missing (${n.why})`);
  if (!canInstall) {
    console.error(`provision: install what is missing, then run the tests again:\n\n  sudo apt-get update && sudo ${install}\n`);
    process.exit(1);
  }
  console.error(`provision: apt-get update && ${install}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], { stdio: 'inherit', env });
  for (const service of new Set(missing.flatMap((n) => (n.service ? [n.service] : [])))) stopService(service);
  const still = missing.filter((n) => !present(n));
  if (still.length > 0) {
    console.error(`provision: still missing after apt-get: ${still.map((n) => n.path).join(', ')}`);
    process.exit(1);
  }
}

/**
 * Debian's postinst enables a daemon's service and starts it where policy allows (a machine
 * with systemd, or sysvinit without a policy-rc.d that denies it). The tests start their own
 * instances on free ports, so a system one would only hold its port (prometheus: 9090) and
 * memory, and come back after every reboot: stop it and keep it from starting. Failures are
 * ignored: each command is the one that applies on some init system and not on others.
 */
function stopService(name: string): void {
  const quiet = { stdio: 'ignore' as const };
  console.error(`provision: stopping and disabling the ${name} service the package installed`);
  if (existsSync('/run/systemd/system')) {
    spawnSync('systemctl', ['disable', '--now', name], quiet);
    return;
  }
  // No systemd running (a container): its unit links are still there for a later boot.
  spawnSync('systemctl', ['disable', name], quiet);
  spawnSync('service', [name, 'stop'], quiet);
  spawnSync('update-rc.d', [name, 'disable'], quiet);
}

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
  why: string;
}

const NEEDS: SystemNeed[] = [
  { binary: 'redis-server', path: '/usr/bin/redis-server', env: 'REDIS_SERVER', debian: 'redis-server', why: 'the Redis half of the suite starts its own redis-server' },
];

function present(n: SystemNeed): boolean {
  if (n.env && process.env[n.env]) return existsSync(process.env[n.env]!);
  return existsSync(n.path);
}

const missing = NEEDS.filter((n) => !present(n));
if (missing.length > 0) {
  const packages = missing.map((n) => n.debian);
  const install = `apt-get install -y ${packages.join(' ')}`;
  const canInstall = process.getuid?.() === 0 && spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0;
  for (const n of missing) console.error(`provision: ${n.binary} is missing (${n.why})`);
  if (!canInstall) {
    console.error(`provision: install it, then run the tests again:\n\n  sudo apt-get update && sudo ${install}\n`);
    process.exit(1);
  }
  console.error(`provision: apt-get update && ${install}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', ...packages], { stdio: 'inherit', env });
  const still = missing.filter((n) => !present(n));
  if (still.length > 0) {
    console.error(`provision: still missing after apt-get: ${still.map((n) => n.path).join(', ')}`);
    process.exit(1);
  }
}

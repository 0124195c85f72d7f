// A real `gateway serve` for the Redis benchmarks (bench/workers.ts, bench/task-commands.ts):
// started as a child process (logs to /dev/null), ready once /readyz answers 200, and the admin
// calls that set a tenant up.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { gatewayCommand } from './support.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const ADMIN = 'bench-admin-token';

/** `gateway serve --config <config> ...args` on `port`, once ready. */
export async function startServe(config: string, port: number, args: string[] = []): Promise<ChildProcess> {
  // What `npm start` runs: the compiled engine (bench/support.ts).
  const proc = spawn(process.execPath, [await gatewayCommand(ROOT), 'serve', '--config', config, ...args], {
    cwd: ROOT, env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; ; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);
    if (ok) return proc;
    if (proc.exitCode !== null || i > 600) throw new Error(`serve ${args.join(' ')} did not become ready`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** POST to the admin API (token ADMIN). */
export async function admin(base: string, path: string, body: unknown): Promise<any> {
  const r = await fetch(`${base}/admin/v1${path}`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

// `npm run bench [-- <name> ...]`: runs the benchmark files listed below, one after the other,
// each in its own process (so one benchmark's heap, pools and timers never colour the next).
// Add a benchmark by adding its file here; arguments select benchmarks by name.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(new URL('./', import.meta.url));

export const BENCHMARKS: ReadonlyArray<{ name: string; file: string; about: string }> = [
  { name: 'media', file: 'media.ts', about: 'small-request latency and event-loop delay during a burst of 20 creates carrying 15 MB Base64 images: media pool vs main thread' },
  { name: 'throughput', file: 'throughput.ts', about: 'asynchronous creates per second on the memory store' },
  { name: 'chat', file: 'chat.ts', about: 'chat proxy overhead against a direct call and a minimal proxy' },
  { name: 'webhooks', file: 'webhooks.ts', about: 'signed webhook deliveries per second, and the API latency during a delivery burst' },
  { name: 'store', file: 'store.ts', about: 'creates/s and GET polls/s on the memory store and on Redis, Redis memory per finished task, RSS under steady load' },
  { name: 'result-copy', file: 'result-copy.ts', about: 'result store: MB/s copying one 200 MB file from a provider into the local and S3 backends, and the gateway process RSS rise during it' },
  { name: 'workers', file: 'workers.ts', about: 'serve --workers 1 and 2 on Redis: sync chat and async creates per second, gateway and Redis CPU and Redis commands per request' },
];

const wanted = process.argv.slice(2);
const selected = wanted.length ? BENCHMARKS.filter((b) => wanted.includes(b.name)) : BENCHMARKS;
if (wanted.length && selected.length !== wanted.length) {
  console.error(`unknown benchmark; choose from: ${BENCHMARKS.map((b) => b.name).join(', ')}`);
  process.exit(2);
}
let failed = 0;
for (const b of selected) {
  console.log(`\n=== ${b.name}: ${b.about}\n`);
  const r = spawnSync(process.execPath, [`${HERE}${b.file}`], { stdio: 'inherit' });
  if (r.status !== 0) {
    failed++;
    console.error(`${b.name} exited with ${r.status ?? r.signal}`);
  }
}
process.exit(failed ? 1 : 0);

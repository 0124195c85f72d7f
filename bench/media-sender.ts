// The big-upload client of bench/media.ts, in its own process: it prepares BENCH_BIG request
// bodies, each with a distinct BENCH_BIG_MB MB Base64 PNG, and on `send` posts them all at once.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';

const BIG = Number(process.env.BENCH_BIG ?? 20);
const BIG_MB = Number(process.env.BENCH_BIG_MB ?? 15);
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
const raw = ((BIG_MB * 1024 * 1024) / 4) * 3;
const bodies = Array.from({ length: BIG }, (_, i) => {
  const bytes = randomBytes(raw);
  PNG.copy(bytes, 0);
  return Buffer.from(JSON.stringify({ prompt: `burst ${i}`, first_frame: bytes.toString('base64'), resolution: '720p' }));
});
const total = bodies.reduce((n, b) => n + b.length, 0);

process.on('message', async (m: { cmd: string; url: string; key: string; path: string; count?: number }) => {
  if (m.cmd === 'stop') process.exit(0);
  if (m.cmd !== 'send') return;
  const pool = new Pool(m.url, { connections: BIG, keepAliveTimeout: 60_000, bodyTimeout: 300_000, headersTimeout: 300_000 });
  const t0 = performance.now();
  const statuses = await Promise.all(bodies.slice(0, m.count ?? BIG).map(async (body) => {
    const res = await pool.request({ path: m.path, method: 'POST', headers: { authorization: `Bearer ${m.key}`, 'content-type': 'application/json' }, body });
    await res.body.dump();
    return res.statusCode;
  }));
  const ms = performance.now() - t0;
  await pool.close();
  process.send!({ cmd: 'sent', statuses, ms, bytes: (m.count ?? BIG) === BIG ? total : bodies.slice(0, m.count).reduce((n, b) => n + b.length, 0) });
});
process.send!({ cmd: 'ready', total });

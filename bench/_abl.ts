import { spawn } from 'node:child_process';
import { Pool } from 'undici';
import { startBenchUpstream } from './chat-upstream.ts';
import { spawnSync } from 'node:child_process';
spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
const up = await startBenchUpstream();
const variants = (process.env.VARIANTS ?? 'full').split(' ');
const body = Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'You are a concise assistant. Answer in one short paragraph.' }, { role: 'user', content: 'Explain in two sentences why the sky looks blue during the day and red at sunset.' }], temperature: 0.7, max_completion_tokens: 200, ...(process.env.STREAM ? { stream: true } : {}) }));
for (const v of variants) {
  const [abl, log, logdest] = v.split(':');
  const child = spawn('taskset', ['-c', '0', process.execPath, new URL('./chat-gateway.ts', import.meta.url).pathname], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], env: { ...process.env, UPSTREAM_URL: up.url, BENCH_ABLATE: abl === 'full' ? '' : abl, BENCH_LOG: log || 'info', ...(logdest ? { BENCH_LOGDEST: logdest } : {}) } });
  const msg: any = await new Promise((r) => child.once('message', r));
  const cpu = () => new Promise<number>((r) => { child.once('message', (m: any) => r(m.cpu.user + m.cpu.system)); child.send({ cpu: true }); });
  for (const conns of [10, 64]) {
    const pool = new Pool(msg.url, { connections: conns });
    let stop = false, n = 0, measuring = false;
    const once = () => new Promise<void>((resolve, reject) => pool.dispatch({ path: '/v1/chat/completions', method: 'POST', headers: { authorization: `Bearer ${msg.key}`, 'content-type': 'application/json' }, body }, { onRequestStart() {}, onResponseStart() {}, onResponseData() {}, onResponseEnd() { resolve(); }, onResponseError(_c: any, e: any) { reject(e); } } as any));
    const w = async () => { while (!stop) { await once(); if (measuring) n++; } };
    const ws = Array.from({ length: conns }, w);
    await new Promise((r) => setTimeout(r, 1500));
    const c0 = await cpu(); measuring = true; const t0 = performance.now();
    await new Promise((r) => setTimeout(r, Number(process.env.SECS ?? 3) * 1000));
    stop = true; await Promise.all(ws); const el = (performance.now() - t0) / 1000; const c1 = await cpu();
    console.log(v.padEnd(22), conns, 'rps', (n / el).toFixed(0), 'cpu µs/req', ((c1 - c0) / n).toFixed(1));
    await pool.close();
  }
  child.disconnect(); await new Promise((r) => child.once('exit', r));
}
await up.close();

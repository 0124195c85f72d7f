import { spawn } from 'node:child_process';
import { Pool } from 'undici';
import { performance } from 'node:perf_hooks';
import { startBenchUpstream } from './chat-upstream.ts';
const up = await startBenchUpstream();
const core = process.env.CORE ?? '0';
const child = spawn('taskset', ['-c', core, process.execPath, new URL('./chat-gateway.ts', import.meta.url).pathname], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], env: { ...process.env, UPSTREAM_URL: up.url } });
const msg: any = await new Promise((r) => child.once('message', r));
const stream = process.env.STREAM === '1';
up.holdMs = 20;
const body = Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Explain why the sky is blue.' }], ...(stream ? { stream: true } : {}) }));
const pool = new Pool(msg.url, { connections: 1 });
const res: number[] = []; const st: string[] = [];
for (let i = 0; i < 220; i++) {
  const t0 = performance.now(); let first = 0; let timing = '';
  await new Promise<void>((resolve, reject) => pool.dispatch({ path: '/v1/chat/completions', method: 'POST', headers: { authorization: `Bearer ${msg.key}`, 'content-type': 'application/json' }, body }, { onRequestStart() {}, onResponseStart(_c: any, s: number, h: any) { timing = h['server-timing']; }, onResponseData() { if (!first) first = performance.now(); }, onResponseEnd() { resolve(); }, onResponseError(_c: any, e: any) { reject(e); } } as any));
  if (i >= 20) { res.push(first - t0); st.push(timing); }
}
res.sort((a, b) => a - b);
console.log('ttfb p50', res[100].toFixed(3), 'p10', res[20].toFixed(3));
console.log(st.slice(0, 5));
child.disconnect(); await pool.close(); await up.close();

// The gateway under benchmark (a child process of bench/media.ts and bench/throughput.ts):
// providers A and D against UPSTREAM_URL, memory store (redis with BENCH_REDIS_URL, a key prefix of
// its own per process: gateways sharing one Redis under one prefix ran each other's polls), no limits, quiet logs,
// the result copy off (issue 34 measures it apart; the stub's result URLs name an unresolvable host,
// so with it on no task ever settled: each was polled again until its deadline, and the CPU per
// create of bench/compare.ts grew with how many such tasks a run had piled up). GATEWAY_MEDIA_DECODE
// (pool | inline) says where large bodies are parsed and their media checked. Over IPC it
// reports its URL and API key, and measures its own event-loop delay and CPU time on request.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
// The engine runs compiled, as it ships (dist/, bench/support.ts's shipped()).
import { fileURLToPath } from 'node:url';
import { NO_LIMITS } from '../test/helpers/no-limits.ts';
import { shipped } from './support.ts';
import { turnProbe, type TurnLog } from './turns.ts';

const { loadConfigText } = await shipped<typeof import('../engine/load-config.ts')>('load-config.ts');
const { startGateway } = await shipped<typeof import('../engine/gateway.ts')>('gateway.ts');

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const up = process.env.UPSTREAM_URL!;
const config = loadConfigText(`
server: { host: 127.0.0.1, port: 0 }
metrics: { port: 0 }
store: ${process.env.BENCH_REDIS_URL ? `{ kind: redis, redis_url: "${process.env.BENCH_REDIS_URL}", key_prefix: "bench${process.pid}" }` : '{ kind: memory }'}
sandbox: { enabled: false }
results: { store: off }
log: { level: ${process.env.BENCH_LOG_LEVEL ?? 'warn'} }
timing: { scale: ${process.env.BENCH_TIMING_SCALE ?? 1} }
vendors: { dir: vendors, enabled: [provider_a, provider_d] }
${NO_LIMITS}
upstreams:
  provider_a: { base_url: "${up}", credentials: { api_key: bench }, timeout_ms: 120000 }
  provider_d: { base_url: "${up}", credentials: { api_key: bench } }
`, ROOT, { env: {} });
const gw = await startGateway(config);
const tenant = await gw.tenants.createTenant({ name: 'bench' });
const { key } = await gw.tenants.issueKey(tenant.id, {});
await gw.billing.topUp(tenant.id, 1_000_000_000_000, 'bench-topup');
// BENCH_V8_FLAGS: V8 flags set once the gateway is up (v8.setFlagsFromString, commas for spaces),
// as the gateway could set them itself: bench/compare.ts <tree> '<tree>+BENCH_V8_FLAGS=--heap-growing-percent=20'.
if (process.env.BENCH_V8_FLAGS) (await import('node:v8')).setFlagsFromString(process.env.BENCH_V8_FLAGS.replaceAll(',', ' '));

// BENCH_DEBUG: how long requests took to reach the 'request' event (clients send x-sent-at).
const arrivals: number[] = [];
if (process.env.BENCH_DEBUG) {
  gw.server.prependListener('request', (req) => {
    const sent = Number(req.headers['x-sent-at']);
    if (sent) arrivals.push(Date.now() - sent);
  });
}

const eld = monitorEventLoopDelay({ resolution: 1 });
let turns: (() => TurnLog) | undefined;
// Submissions and polls running (gateway_task_calls_running), every 100 ms of the probe.
const calls: number[] = [];
let callsTimer: NodeJS.Timeout | undefined;
/** Stops the event-loop delay histogram and answers its figures, ms. */
const loopDelay = () => {
  eld.disable();
  const ms = (ns: number) => Math.round((ns / 1e6) * 100) / 100;
  return { p50: ms(eld.percentile(50)), p99: ms(eld.percentile(99)), max: ms(eld.max), mean: ms(eld.mean) };
};
process.on('message', (m: { cmd: string }) => {
  if (m.cmd === 'eld-start') {
    eld.reset();
    eld.enable();
    process.send!({ cmd: 'eld-started' });
  } else if (m.cmd === 'eld-stop') {
    const delay = loopDelay();
    if (process.env.BENCH_DEBUG) console.error('arrival delays (ms), slowest:', arrivals.sort((a, b) => b - a).slice(0, 10).join(' '), `of ${arrivals.length}`);
    arrivals.length = 0;
    process.send!({ cmd: 'eld', ...delay });
  } else if (m.cmd === 'turns-start') {
    // The long-turn probe (bench/turns.ts), with this process's event-loop delay.
    turns = turnProbe();
    calls.length = 0;
    callsTimer = setInterval(() => calls.push(gw.lifecycle.callsRunning), 100);
    eld.reset();
    eld.enable();
    process.send!({ cmd: 'turns-started' });
  } else if (m.cmd === 'turns-stop') {
    clearInterval(callsTimer);
    const callsRunning = { mean: Math.round(calls.reduce((a, b) => a + b, 0) / Math.max(1, calls.length)), max: Math.max(0, ...calls) };
    process.send!({ cmd: 'turns', log: turns?.(), callsRunning, eld: loopDelay() });
    turns = undefined;
  } else if (m.cmd === 'direct') {
    // Creates without HTTP: validation, pricing and hold, the task store, task.created, and the
    // upstream submission that follows each create, run by `concurrency` loops for `seconds`.
    const { seconds, concurrency } = m as unknown as { seconds: number; concurrency: number };
    void (async () => {
      const route = gw.vendors.flatMap((v) => v.routes).find((r) => r.kind === 'async' && r.key === 'provider_d/image_generation');
      if (!route || route.kind !== 'async') throw new Error('no model D route');
      const body = { prompt: 'a red fox in fresh snow, watercolor', n: 1 };
      let count = 0;
      let refused = 0;
      let stop = false;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      setTimeout(() => (stop = true), seconds * 1000);
      await Promise.all(Array.from({ length: concurrency }, async () => {
        while (!stop) {
          const request = await route.validate(structuredClone(body));
          try {
            await gw.lifecycle.create(route, tenant.id, request);
          } catch (err) {
            // Refused at the backlog bound (503 / 4001): wait, as a client told Retry-After would.
            if ((err as { code?: number }).code !== 4001) throw err;
            refused++;
            await new Promise((r) => setTimeout(r, 10));
            continue;
          }
          count++;
          if (count % 64 === 0) await new Promise((r) => setImmediate(r)); // let submissions and I/O run
        }
      }));
      const elapsed = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      process.send!({ cmd: 'direct', count, refused, seconds: elapsed, cpu_us: cpu.user + cpu.system });
    })();
  } else if (m.cmd === 'cpu') {
    process.send!({ cmd: 'cpu', cpu: process.cpuUsage(), main: process.threadCpuUsage() });
  } else if (m.cmd === 'mem') {
    process.send!({ cmd: 'mem', rss: process.memoryUsage().rss, heap: process.memoryUsage().heapUsed });
  } else if (m.cmd === 'stop') {
    void gw.close().then(() => process.exit(0));
  }
});
process.send!({ cmd: 'ready', url: gw.url, key });

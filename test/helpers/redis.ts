// A real, throw-away redis-server for tests: spawned on a free loopback port (no RDB, no AOF
// unless asked), ready once it answers PING, stopped with SIGTERM (then SIGKILL). Every test file
// that needs Redis starts its own.
//
//   const redis = await startRedis();
//   const a = redis.client(), b = redis.client();   // a NEW connection per call
//   ...
//   await redis.stop();                             // closes those connections, stops the server
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';

export interface StartRedisOptions {
  /** Append-only file on (appendfsync always), in `dir` (default: a temp dir removed on stop). */
  aof?: boolean;
  /** Working directory of the server (AOF / RDB files). Kept on stop when given. */
  dir?: string;
  /** Use this port instead of a free one (e.g. to restart a server on the same port). */
  port?: number;
  /**
   * Cluster mode on one node that owns all 16384 slots: a plain client still works, but every
   * multi-key command or script whose keys span hash slots fails with CROSSSLOT, which is how
   * the store tests check the key layout.
   */
  cluster?: boolean;
  /** Extra redis-server arguments, e.g. ['--maxmemory', '64mb']. */
  args?: string[];
  /** Default: /usr/bin/redis-server, or REDIS_SERVER from the environment. */
  bin?: string;
}

export interface RedisServer {
  url: string;
  port: number;
  /** Stop the server (SIGTERM, SIGKILL after 5 s) and disconnect every client() it handed out. */
  stop(): Promise<void>;
  /** A new ioredis connection to this server (disconnected by stop()). */
  client(opts?: RedisOptions): Redis;
  /** The server process (e.g. to SIGKILL it in a crash test). */
  process: ChildProcess;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

export async function startRedis(opts: StartRedisOptions = {}): Promise<RedisServer> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      return await startOnce(opts, opts.port ?? (await freePort()));
    } catch (err) {
      lastError = err;
      if (opts.port !== undefined || !/in use/i.test(String(err))) break;
    }
  }
  throw lastError;
}

async function startOnce(opts: StartRedisOptions, port: number): Promise<RedisServer> {
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'gw-redis-'));
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--dir', dir,
    '--save', '',
    '--appendonly', opts.aof ? 'yes' : 'no',
    ...(opts.aof ? ['--appendfsync', 'always'] : []),
    '--daemonize', 'no',
    '--loglevel', 'warning',
    ...(opts.cluster ? ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf')] : []),
    ...(opts.args ?? []),
  ];
  const child = spawn(opts.bin ?? process.env.REDIS_SERVER ?? '/usr/bin/redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  child.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  exited.then(() => live.delete(child), () => {});
  const spawnError = new Promise<never>((_, reject) =>
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'ENOENT' ? new Error('redis-server is not installed: the Redis tests need it (Debian: apt-get install redis-server; .ci/run installs it)') : err),
    ),
  );

  const cleanupDir = () => {
    if (ownDir) rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.race([
      waitForPing(port, 10_000),
      spawnError,
      exited.then((code) => Promise.reject(new Error(`redis-server exited (${code}) before it was ready: ${output.trim()}`))),
    ]);
    if (opts.cluster) await claimAllSlots(port);
  } catch (err) {
    // A server that never started (no binary) emits no 'exit': nothing to wait for then.
    if (child.pid !== undefined) {
      child.kill('SIGKILL');
      await exited;
    }
    live.delete(child);
    cleanupDir();
    throw err;
  }

  const clients = new Set<Redis>();
  let stopped: Promise<void> | undefined;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    process: child,
    client(extra?: RedisOptions): Redis {
      const c = new Redis({ host: '127.0.0.1', port, ...extra });
      c.on('error', () => {}); // connection errors surface as failed commands; no console noise
      clients.add(c);
      return c;
    },
    stop(): Promise<void> {
      stopped ??= (async () => {
        for (const c of clients) c.disconnect();
        clients.clear();
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          await exited;
          clearTimeout(timer);
        }
        cleanupDir();
      })();
      return stopped;
    },
  };
}

async function claimAllSlots(port: number): Promise<void> {
  const c = new Redis({ host: '127.0.0.1', port, lazyConnect: true });
  c.on('error', () => {});
  try {
    await c.connect();
    const info = String(await c.call('CLUSTER', 'INFO'));
    if (!/cluster_slots_assigned:16384/.test(info)) await c.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
    const deadline = Date.now() + 10_000;
    while (!/cluster_state:ok/.test(String(await c.call('CLUSTER', 'INFO')))) {
      if (Date.now() > deadline) throw new Error('single-node cluster did not reach cluster_state:ok');
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    c.disconnect();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** Resolves once the server answers +PONG. */
async function waitForPing(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await ping(port)) return;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    let buf = '';
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(500, () => done(false));
    s.once('error', () => done(false));
    s.once('connect', () => s.write('PING\r\n'));
    s.on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\r\n')) done(buf.startsWith('+PONG'));
    });
  });
}

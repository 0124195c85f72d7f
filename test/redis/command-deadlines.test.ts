// The fail-fast client's deadlines (engine/store/redis/client.ts, CommandGuard): every command
// answers within the command timeout or fails with 503 / 4003, each by its own deadline, and a
// connection that receives nothing for that long is dropped, so later commands are refused at once
// until it is back. A real redis-server sits behind a loopback proxy that can slow its answers to a
// trickle (data keeps arriving, a reply takes seconds) or hold them (nothing arrives).
import { expect } from 'chai';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { failFastRedis, type FailFastRedis } from '../../engine/store/redis/client.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';

const TIMEOUT_MS = 400;
/** How late past its deadline a command may fail on a loaded machine. */
const SLACK_MS = 600;

type Mode = 'pass' | 'trickle' | 'hold';

/** A TCP proxy to `port` whose server-to-client direction passes, trickles (a byte per 25 ms) or holds. */
async function proxy(port: number): Promise<{ port: number; set(mode: Mode): void; close(): Promise<void> }> {
  let mode: Mode = 'pass';
  const pipes = new Set<{ flush(): void; destroy(): void }>();
  const server: Server = createServer((client: Socket) => {
    const upstream = connect(port, '127.0.0.1');
    let held = Buffer.alloc(0);
    let timer: NodeJS.Timeout | undefined;
    const pump = () => {
      timer = undefined;
      if (held.length === 0 || client.destroyed) return;
      if (mode === 'pass') {
        client.write(held);
        held = Buffer.alloc(0);
      } else if (mode === 'trickle') {
        client.write(held.subarray(0, 1));
        held = held.subarray(1);
        timer = setTimeout(pump, 25);
      }
    };
    const pipe = { flush: () => timer === undefined && pump(), destroy: () => (client.destroy(), upstream.destroy()) };
    pipes.add(pipe);
    upstream.on('data', (d: Buffer) => {
      held = Buffer.concat([held, d]);
      pipe.flush();
    });
    client.on('data', (d) => upstream.write(d));
    const end = () => {
      clearTimeout(timer);
      pipes.delete(pipe);
      pipe.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    port: (server.address() as { port: number }).port,
    set(m) {
      mode = m;
      for (const p of pipes) p.flush();
    },
    close: () => new Promise<void>((ok) => {
      for (const p of pipes) p.destroy();
      server.close(() => ok());
    }),
  };
}

/** When `p` settled (ms since `from`), and its error. */
const settled = async (p: Promise<unknown>, from: number) => {
  try {
    await p;
    return { ms: performance.now() - from, err: undefined };
  } catch (err) {
    return { ms: performance.now() - from, err: err as { code?: number; status?: number; cause?: Error } };
  }
};

describe('redis mode: every command answers within the command timeout', function () {
  this.timeout(20_000);
  let redis: RedisServer;
  let link: Awaited<ReturnType<typeof proxy>>;
  let client: FailFastRedis;
  before(async () => {
    redis = await startRedis();
    await redis.client().set('big', 'x'.repeat(200));
  });
  beforeEach(async () => {
    link = await proxy(redis.port);
    client = failFastRedis(`redis://127.0.0.1:${link.port}`, TIMEOUT_MS);
    client.on('error', () => {});
    await client.connect();
  });
  afterEach(async () => {
    client.disconnect();
    await link.close();
  });
  after(() => redis?.stop());

  it('a reply slower than the timeout fails its command (4003) by its own deadline; the connection stays and serves the next', async () => {
    link.set('trickle');
    const t0 = performance.now();
    const first = settled(client.get('big'), t0);
    await new Promise((r) => setTimeout(r, TIMEOUT_MS / 2));
    const t1 = performance.now();
    const second = settled(client.get('big'), t1);
    const [a, b] = await Promise.all([first, second]);
    for (const [r, name] of [[a, 'first'], [b, 'second']] as const) {
      expect(r.err, `${name} refused`).to.include({ code: 4003, status: 503 });
      expect(r.err!.cause!.message).to.equal('Command timed out');
      expect(r.ms, `${name}: failed at its own deadline`).to.be.within(TIMEOUT_MS - 5, TIMEOUT_MS + SLACK_MS);
    }
    // Bytes kept arriving: the connection is not taken for dead.
    expect(client.status).to.equal('ready');
    link.set('pass');
    // The late replies are matched with the failed commands, not with this one.
    expect(await client.set('k', 'v')).to.equal('OK');
    expect(await client.get('k')).to.equal('v');
  });

  it('a Redis that sends nothing is dropped after the timeout: the commands waiting fail, the next are refused at once, and it serves again once back', async () => {
    link.set('hold');
    const t0 = performance.now();
    const waiting = await Promise.all([settled(client.get('big'), t0), settled(client.ping(), t0)]);
    for (const r of waiting) {
      expect(r.err, 'refused').to.include({ code: 4003, status: 503 });
      expect(r.ms).to.be.within(TIMEOUT_MS - 5, TIMEOUT_MS + SLACK_MS);
    }
    // The drop follows the commands' own deadlines within the same check (the close comes a turn later).
    await new Promise((r) => setTimeout(r, 20));
    expect(client.status, 'dropped').to.not.equal('ready');
    const t1 = performance.now();
    const next = await settled(client.get('k'), t1);
    expect(next.err, 'refused while reconnecting').to.include({ code: 4003, status: 503 });
    expect(next.ms, 'at once').to.be.below(50);
    link.set('pass');
    const back = Date.now() + 5000;
    while (client.status !== 'ready' && Date.now() < back) await new Promise((r) => setTimeout(r, 20));
    expect(await client.ping()).to.equal('PONG');
  });

  it('answered commands leave nothing to fail later, and an idle connection is not dropped', async () => {
    for (let i = 0; i < 50; i++) await client.ping();
    await new Promise((r) => setTimeout(r, TIMEOUT_MS * 2.5));
    expect(client.status).to.equal('ready');
    expect(await client.ping()).to.equal('PONG');
  });
});

// Log lines go to stdout in batches (sonic-boom's minLength + periodicFlush, engine/log/logger.ts): every
// line arrives, in order, including lines logged just before the process exits; a line waits
// for no later traffic; a pending batch never keeps the process alive.
import { expect } from 'chai';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { ROOT } from '../helpers/gateway.ts';

const run = promisify(execFile);

describe('log lines on stdout', function () {
  this.timeout(30_000);

  it('arrive complete and in order, across turns and at process.exit()', async () => {
    const script = `
      import { createLogger } from ${JSON.stringify(`${ROOT}engine/log/logger.ts`)};
      const log = createLogger('info');
      for (let i = 0; i < 1500; i++) log.info({ i }, 'sync burst');           // more than one batch in one turn
      await new Promise((r) => setImmediate(r));
      for (let i = 1500; i < 1600; i++) { log.info({ i }, 'one per turn'); await new Promise((r) => setImmediate(r)); }
      log.info({ i: 1600, authorization: 'Bearer secret' }, 'last, then exit');
      process.exit(3);
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script]).catch((e: { stdout: string; code: number }) => {
      expect(e.code).to.equal(3);
      return e;
    });
    const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as { i: number; authorization?: string });
    expect(lines.map((l) => l.i)).to.deep.equal(Array.from({ length: 1601 }, (_, i) => i));
    expect(lines.at(-1)!.authorization).to.equal('[redacted]');
  });

  it('are written within moments on a quiet process, and a pending batch does not hold the exit', async () => {
    const script = `
      import { createLogger } from ${JSON.stringify(`${ROOT}engine/log/logger.ts`)};
      const log = createLogger('info');
      log.info({ i: 0 }, 'alone');
      setTimeout(() => log.info({ i: 1 }, 'last; the process then ends on its own'), 600);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const started = Date.now();
    const seen: { at: number; text: string }[] = [];
    child.stdout.on('data', (d: Buffer) => seen.push({ at: Date.now() - started, text: d.toString() }));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    const exitedAt = Date.now() - started;
    expect(code).to.equal(0);
    const lines = seen.map((s) => s.text).join('').trim().split('\n').map((l) => JSON.parse(l) as { i: number });
    expect(lines.map((l) => l.i)).to.deep.equal([0, 1]);
    // The first line came out long before the second was logged, not with it at exit.
    expect(seen[0]!.text).to.not.include('"i":1');
    expect(exitedAt - seen[0]!.at).to.be.above(300);
  });
});

// Log lines go to stdout in one write per event-loop turn (engine/log/logger.ts): every line
// arrives, in order, including lines logged just before the process exits.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
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
});

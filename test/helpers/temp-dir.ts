// Mocha root hooks: every temporary file or directory a test makes (through os.tmpdir(), in this
// process and in the processes it starts, which inherit TMPDIR) goes under one directory of the
// run's own, removed when the run ends. Tests then need no cleanup of their own, and a run leaves
// nothing behind in /tmp (before this, ~30 directories a run piled up).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const runDir = mkdtempSync(join(tmpdir(), 'gateway-test-run-'));
process.env.TMPDIR = runDir;

export const mochaHooks = {
  afterAll() {
    rmSync(runDir, { recursive: true, force: true, maxRetries: 3 });
  },
};

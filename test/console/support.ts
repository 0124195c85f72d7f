// Shared by the console's browser tests: Debian's chromium (installed by test/provision.ts and
// .ci/run), and the folder the screenshots go to (gitignored).
import { mkdirSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const ARTIFACTS = new URL('./artifacts/', import.meta.url).pathname;

/** Headless; one browser per test file keeps the run short. CHROMIUM names another binary, as in test/provision.ts. */
export async function launchChromium(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
}

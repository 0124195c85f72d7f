#!/usr/bin/env node
// The `gateway` command as npm installs it (package.json "bin"; `npm start` runs `gateway serve`
// through this file too). Whatever Node runs this file (a machine's own, older one: `npx` starts
// bins with the first `node` on PATH), the gateway itself runs on the Node of the `node` package
// this project depends on (Node 24), as JavaScript compiled into dist/ (build.mjs: built here
// first when the sources changed). On a recent enough Node the gateway runs in this process;
// otherwise this file is run again by that package's binary, with signals passed on and its exit
// status returned. `serve` first sizes V8's worker pool to the CPUs it may run on (v8-pool.mjs).
// Plain JavaScript, so any Node from 18 runs it.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { sizeV8Pool } from './v8-pool.mjs';

const [major, minor] = process.versions.node.split('.').map(Number);
// The Node the gateway is written for (and, should dist/ be unbuildable, one that strips types:
// on by default from Node 22.18 / 23.6).
const runs = major > 23 || (major === 23 && minor >= 6) || (major === 22 && minor >= 18);

if (runs) {
  if (process.argv[2] === 'serve') sizeV8Pool();
  const { shippedEntry } = await import('./build.mjs');
  const entry = await shippedEntry().catch((err) => {
    console.error(`gateway: ${err.message}`);
    process.exit(1);
  });
  await import(pathToFileURL(entry).href);
} else {
  const bundled = fileURLToPath(new URL('../../node_modules/node/bin/node', import.meta.url));
  if (!existsSync(bundled)) {
    console.error(`gateway: Node ${process.versions.node} cannot run the gateway, and the "node" package's binary (${bundled}) is missing: run \`npm ci\` first.`);
    process.exit(1);
  }
  const child = spawn(bundled, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}

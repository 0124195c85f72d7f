#!/usr/bin/env node
// The `gateway` command as npm installs it (package.json "bin"). Whatever Node runs this file
// (a machine's own, older one: `npx` starts bins with the first `node` on PATH), the gateway
// itself runs on the Node of the `node` package this project depends on (Node 24: it runs the
// TypeScript sources as they are). Already on a Node that strips types, main.ts is imported in
// this process; otherwise it is run by that package's binary, with signals passed on and its
// exit status returned. Plain JavaScript, so any Node from 18 runs it.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('./main.ts', import.meta.url));
const [major, minor] = process.versions.node.split('.').map(Number);
// Type stripping is on by default from Node 22.18 / 23.6.
const strips = major > 23 || (major === 23 && minor >= 6) || (major === 22 && minor >= 18);

if (strips) {
  await import(main);
} else {
  const bundled = fileURLToPath(new URL('../../node_modules/node/bin/node', import.meta.url));
  if (!existsSync(bundled)) {
    console.error(`gateway: Node ${process.versions.node} cannot run the gateway, and the "node" package's binary (${bundled}) is missing: run \`npm ci\` first.`);
    process.exit(1);
  }
  const child = spawn(bundled, [main, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}

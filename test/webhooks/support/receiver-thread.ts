// The thread of a ThreadReceiver (receiver.ts): answers every request 200 and posts each one,
// stamped on arrival, to the test's thread; the first message is the port. Its key and
// certificate come from the test's thread (workerData), whose CA the gateway trusts.
import { createServer } from 'node:https';
import { parentPort, workerData } from 'node:worker_threads';
import type { AddressInfo } from 'node:net';
import { onEachRequest } from './receiver.ts';

const server = createServer(workerData as { key: string; cert: string });
onEachRequest(server, (rec, res) => {
  parentPort!.postMessage({ ...rec, at: performance.timeOrigin + rec.at });
  res.writeHead(200);
  res.end('ok');
});
server.listen(0, '127.0.0.1', () => parentPort!.postMessage((server.address() as AddressInfo).port));

// Piscina worker: signs and sends delivery attempts. Node 24 loads this .ts file natively.
// Its options (user agent, CAs, allow-list) arrive once as workerData; see pool.ts.
import { esmWorkerData } from '../util/esm-worker.ts';
import { createSender, type SendTask, type SendResult, type SenderOptions } from './sender.ts';

const sender = createSender(esmWorkerData<SenderOptions>());

export default function attempt(task: SendTask): Promise<SendResult> {
  return sender.send(task);
}

// The Redis connections of the request path (the store adapters, the rate-limit counters, and
// BullMQ's producer side). They fail fast instead of waiting for Redis:
//  - no offline queue: a command issued while the connection is down is refused at once, so
//    nothing of a request waits for a reconnect and runs after its client gave up;
//  - no re-sending on reconnect, and commands in flight are failed when the connection drops
//    (maxRetriesPerRequest 0): the request that sent them has been answered by then;
//  - every command answers within `commandTimeoutMs`, and a connection that has returned
//    nothing for that long is dropped (socketTimeout), so a Redis that hangs is treated as
//    one that is gone;
//  - every transport failure is a GatewayError 4003 (503, Retry-After): one mapping for every
//    adapter. Redis's own error replies (a script's refusal, NOSCRIPT) pass through unchanged.
// Background work does not use these semantics to wait: its jobs fail and BullMQ, whose worker
// connections wait for Redis, runs them again once it is back (engine/jobs/bullmq-scheduler.ts).
import { Redis, ReplyError } from 'ioredis';
import { dependencyUnavailable } from '../../errors/gateway-error.ts';

type Command = Parameters<Redis['sendCommand']>[0];
type Stream = Parameters<Redis['sendCommand']>[1];
const MAPPED = Symbol('dependency errors mapped');

export class FailFastRedis extends Redis {
  // The mapping sits in the command's own reject, not on the promise sendCommand returns:
  // ioredis itself calls sendCommand and drops that promise (pipelines), which would leave a
  // second, unhandled rejection.
  override sendCommand(command: Command, stream?: Stream): unknown {
    const reject = command.reject as Command['reject'] & { [MAPPED]?: true };
    if (!reject[MAPPED]) {
      const mapped = (err: Error) => reject(err instanceof ReplyError ? err : dependencyUnavailable('store', err));
      command.reject = Object.assign(mapped, { [MAPPED]: true as const });
    }
    return super.sendCommand(command, stream);
  }
}

/** Reconnect quickly once Redis is back (requests are refused meanwhile, so retrying costs nothing). */
const reconnectDelay = (attempt: number): number => Math.min(50 * 2 ** attempt, 1000);

export function failFastRedis(url: string, commandTimeoutMs: number): FailFastRedis {
  return new FailFastRedis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    socketTimeout: commandTimeoutMs,
    retryStrategy: reconnectDelay,
  });
}

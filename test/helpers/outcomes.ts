// A call's outcome as the services' tests read it: 'ok', or the GatewayError it was refused with
// (any other error is the test's failure and is thrown on). A call may answer a value at once
// (the limits' checks on the memory store) or a promise.
import { expect } from 'chai';
import { GatewayError } from '../../engine/errors/gateway-error.ts';

export async function outcome(p: unknown): Promise<'ok' | GatewayError> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    if (e instanceof GatewayError) return e;
    throw e;
  }
}

/** `n` calls at once: how many passed, and the refusals. */
export async function burst(n: number, call: (i: number) => unknown): Promise<{ ok: number; refused: GatewayError[] }> {
  const rs = await Promise.all(Array.from({ length: n }, (_, i) => outcome(call(i))));
  return { ok: rs.filter((r) => r === 'ok').length, refused: rs.filter((r): r is GatewayError => r !== 'ok') };
}

/** The GatewayError `p` rejects with (fails the test when it resolves or rejects otherwise). */
export async function rejection(p: Promise<unknown>): Promise<GatewayError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, 'expected a GatewayError').to.be.instanceOf(GatewayError);
  return err as GatewayError;
}

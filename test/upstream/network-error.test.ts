// The one classifier of upstream calls without an HTTP answer (engine/upstream/network-error.ts):
// by undici's error classes and errno codes, never by message.
import { expect } from 'chai';
import { errors } from 'undici';
import { UpstreamFailure } from '../../engine/upstream/failure.ts';
import { classifyNetworkError, UpstreamTimeout, UpstreamUnreachable } from '../../engine/upstream/network-error.ts';

describe('upstream network errors', () => {
  it('undici timeouts, the abort signal timeout and ETIMEDOUT are 3004 UpstreamTimeout', () => {
    const timeouts: unknown[] = [
      new errors.HeadersTimeoutError(),
      new errors.BodyTimeoutError(),
      new errors.ConnectTimeoutError(),
      new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
      Object.assign(new Error('connect ETIMEDOUT'), { code: 'ETIMEDOUT' }),
    ];
    for (const err of timeouts) {
      const f = classifyNetworkError(err, 'poll');
      expect(f, String(err)).to.be.instanceOf(UpstreamTimeout);
      expect([f.code, f.stage]).to.deep.equal([3004, 'poll']);
    }
  });

  it('anything else is 3001 UpstreamUnreachable naming the code', () => {
    const refused = classifyNetworkError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'submit');
    expect(refused).to.be.instanceOf(UpstreamUnreachable);
    expect([refused.code, refused.message]).to.deep.equal([3001, 'The provider could not be reached (ECONNREFUSED).']);
    const socket = classifyNetworkError(new errors.SocketError('other side closed'), 'submit');
    expect([socket.code, (socket as UpstreamUnreachable).networkCode]).to.deep.equal([3001, 'UND_ERR_SOCKET']);
    expect(classifyNetworkError(new Error('?'), 'task').message).to.equal('The provider could not be reached (connection failed).');
    // A message that merely mentions a timeout is no timeout.
    expect(classifyNetworkError(new Error('headers timeout'), 'submit').code).to.equal(3001);
  });

  it('an UpstreamFailure the caller aborted with stays as it is', () => {
    const tooLarge = new UpstreamFailure('upstreamResponseError', 'The provider answer is too large.', 'submit');
    expect(classifyNetworkError(tooLarge, 'submit')).to.equal(tooLarge);
  });
});

// Paths built from a provider's answer (engine/upstream/answer-paths.ts): what a provider says
// can never steer a call off the member's base URL. Each refusal, and the forms that pass.
import { expect } from 'chai';
import { buildTaskPath, pathUnderBase, UnsafePathError } from '../../engine/upstream/answer-paths.ts';

const BASE = 'https://queue.fal.run';
const refused = (f: () => unknown, why: RegExp) => expect(f).to.throw(UnsafePathError, why);

describe('paths from the provider\'s answer', () => {
  describe('{upstream_task_id}: one encoded segment', () => {
    it('percent-encodes the id into one segment', () => {
      expect(buildTaskPath('/v1/tasks/{upstream_task_id}', { upstreamTaskId: 'a/b c' })).to.equal('/v1/tasks/a%2Fb%20c');
    });
    it('refuses an id that is a dot segment even so', () => {
      refused(() => buildTaskPath('/v1/tasks/{upstream_task_id}', { upstreamTaskId: '..' }), /\.\. segment/);
      refused(() => buildTaskPath('/v1/tasks/{upstream_task_id}/x', { upstreamTaskId: '.' }), /\. segment/);
      refused(() => buildTaskPath('/v1/tasks/{upstream_task_id}', { upstreamTaskId: '' }), /task id is empty/);
    });
  });

  describe('{upstream_task_id:path}: a relative path, unencoded', () => {
    const at = (id: string) => buildTaskPath('/v1beta/{upstream_task_id:path}', { upstreamTaskId: id });
    it('inserts a Gemini operation name as it is', () => {
      expect(at('models/veo-3.0-generate-001/operations/abc123')).to.equal('/v1beta/models/veo-3.0-generate-001/operations/abc123');
    });
    it('refuses .. and . segments, raw or percent-encoded', () => {
      refused(() => at('models/../../admin'), /\.\. segment/);
      refused(() => at('models/./x'), /\. segment/);
      refused(() => at('models/%2e%2E/x'), /\.\. segment/);
      refused(() => at('..'), /\.\. segment/);
    });
    it('refuses an empty segment (//) and an absolute path', () => {
      refused(() => at('models//x'), /empty segment/);
      refused(() => at('/etc/passwd'), /absolute path/);
    });
    it('refuses a scheme', () => {
      refused(() => at('https://evil.example/x'), /scheme/);
      refused(() => at('javascript:alert(1)'), /scheme/);
    });
    it('refuses control characters, spaces, a backslash and a fragment', () => {
      refused(() => at('models/a\r\nHost: evil'), /control character/);
      refused(() => at('models/a\u0000b'), /control character/);
      refused(() => at('models/a b'), /control character|space/);
      refused(() => at('models\\..\\x'), /backslash/);
      refused(() => at('models/a#frag'), /fragment/);
    });
    it('refuses a query and an encoded slash', () => {
      refused(() => at('models/a?x=1'), /query/);
      refused(() => at('models/a%2Fb'), /encoded slash/);
    });
  });

  describe('{url:<name>}: a URL the submit answer named', () => {
    it('keeps the path and query of a URL on the base URL', () => {
      expect(pathUnderBase('https://queue.fal.run/fal-ai/flux/requests/r1/status?logs=1', BASE)).to.equal('/fal-ai/flux/requests/r1/status?logs=1');
    });
    it('stays below a base URL that has a path of its own', () => {
      expect(pathUnderBase('http://127.0.0.1:9/fal/x/requests/1', 'http://127.0.0.1:9/fal')).to.equal('/x/requests/1');
      refused(() => pathUnderBase('http://127.0.0.1:9/other/x', 'http://127.0.0.1:9/fal'), /not below/);
      refused(() => pathUnderBase('http://127.0.0.1:9/falx/y', 'http://127.0.0.1:9/fal'), /not below/);
    });
    it('refuses another host, port or scheme', () => {
      refused(() => pathUnderBase('https://evil.example/fal-ai/x', BASE), /another scheme, host or port/);
      refused(() => pathUnderBase('https://queue.fal.run:8443/fal-ai/x', BASE), /another scheme, host or port/);
      refused(() => pathUnderBase('http://queue.fal.run/fal-ai/x', BASE), /another scheme, host or port/);
      refused(() => pathUnderBase('https://queue.fal.run.evil.example/x', BASE), /another scheme, host or port/);
    });
    it('refuses credentials, a relative URL, a non-http scheme and a non-string', () => {
      refused(() => pathUnderBase('https://user:pw@queue.fal.run/x', BASE), /credentials/);
      refused(() => pathUnderBase('/fal-ai/x', BASE), /absolute http\(s\) URL/);
      refused(() => pathUnderBase('file:///etc/passwd', BASE), /absolute http\(s\) URL/);
      refused(() => pathUnderBase(42, BASE), /not a string/);
    });
    it('refuses dot segments and // as written (before the URL parser resolves them)', () => {
      refused(() => pathUnderBase('https://queue.fal.run/fal-ai/../admin', BASE), /\.\. segment/);
      refused(() => pathUnderBase('https://queue.fal.run/fal-ai/%2e%2e/admin', BASE), /\.\. segment/);
      refused(() => pathUnderBase('https://queue.fal.run//evil.example/x', BASE), /empty segment/);
    });
    it('refuses control characters and a backslash in the URL', () => {
      refused(() => pathUnderBase('https://queue.fal.run/x\nHost: evil', BASE), /control character/);
      refused(() => pathUnderBase('https://queue.fal.run\\@evil.example/x', BASE), /backslash/);
    });
    it('a {url:<name>} the answer did not name is refused', () => {
      refused(() => buildTaskPath('{url:status}', { upstreamTaskId: 'x', urls: {} }), /named no URL "status"/);
      expect(buildTaskPath('{url:status}', { upstreamTaskId: 'x', urls: { status: '/a/b' } })).to.equal('/a/b');
    });
  });
});

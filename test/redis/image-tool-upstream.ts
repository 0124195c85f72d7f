// The image tool's upstream (submit/fetch style) as a real HTTP server for the multi-process
// tests: every task succeeds on its third poll; submits and polls are counted per task.
import { FakeUpstream, json } from '../helpers/upstream.ts';

export interface CountingUpstream extends FakeUpstream {
  submits: Map<string, number>;
  polls: Map<string, number>;
}

export function countingImageToolUpstream(): CountingUpstream {
  const up = new FakeUpstream() as CountingUpstream;
  up.submits = new Map();
  up.polls = new Map();
  let seq = 0;
  up.on('POST', '/mj/submit/imagine', (req, res) => {
    const id = `up-${++seq}`;
    up.submits.set(req.body.prompt, (up.submits.get(req.body.prompt) ?? 0) + 1);
    json(res, 200, { code: 1, result: id, description: 'ok' });
  });
  up.on('GET', /^\/mj\/task\/[^/]+\/fetch$/, (req, res) => {
    const id = req.path.split('/')[3]!;
    const n = (up.polls.get(id) ?? 0) + 1;
    up.polls.set(id, n);
    if (n < 3) return json(res, 200, { id, status: n === 1 ? 'SUBMITTED' : 'IN_PROGRESS' });
    json(res, 200, { id, status: 'SUCCESS', imageUrls: [0, 1, 2, 3].map((i) => `https://cdn.example.com/${id}/${i}.png`) });
  });
  return up;
}

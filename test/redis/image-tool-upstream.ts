// The image tool's upstream (submit/fetch style) as a real HTTP server for the multi-process
// tests: every task succeeds on its third poll; submits and polls are counted per task.
// Image tools differ in how they spell result URLs (strings, or {url} objects), so the shape of
// `imageUrls` / `videoUrls` is the test's to choose (`urlShape`, fixed per task at submission).
import type { ServerResponse } from 'node:http';
import { FakeUpstream, json, type Seen } from '../helpers/upstream.ts';

/** Turns a task's result URLs into what the upstream answers for them. */
export type UrlShape = (urls: string[]) => unknown;

export interface CountingUpstream extends FakeUpstream {
  /** Submissions received per prompt (a repeat under a known Idempotency-Key included). */
  submits: Map<string, number>;
  /** Idempotency-Key -> the upstream task it made: a repeat gets that task, as a provider that dedupes answers. */
  keys: Map<string, string>;
  /** How long a submission's answer takes (ms). */
  submitDelayMs: number;
  polls: Map<string, number>;
  /** Strings by default. */
  urlShape: UrlShape;
}

export function countingImageToolUpstream(): CountingUpstream {
  const up = new FakeUpstream() as CountingUpstream;
  up.submits = new Map();
  up.keys = new Map();
  up.submitDelayMs = 0;
  up.polls = new Map();
  up.urlShape = (urls) => urls;
  const tasks = new Map<string, { video: boolean; shape: UrlShape }>();
  let seq = 0;
  const submit = (video: boolean) => async (req: Seen, res: ServerResponse) => {
    up.submits.set(req.body.prompt, (up.submits.get(req.body.prompt) ?? 0) + 1);
    const key = req.headers['idempotency-key'] as string | undefined;
    let id = key === undefined ? undefined : up.keys.get(key);
    if (id === undefined) {
      id = `up-${++seq}`;
      tasks.set(id, { video, shape: up.urlShape });
      if (key !== undefined) up.keys.set(key, id);
    }
    if (up.submitDelayMs) await new Promise((r) => setTimeout(r, up.submitDelayMs));
    json(res, 200, { code: 1, result: id, description: 'ok' });
  };
  up.on('POST', '/mj/submit/imagine', submit(false));
  up.on('POST', '/mj/submit/video', submit(true));
  up.on('GET', /^\/mj\/task\/[^/]+\/fetch$/, (req, res) => {
    const id = req.path.split('/')[3]!;
    const n = (up.polls.get(id) ?? 0) + 1;
    up.polls.set(id, n);
    if (n < 3) return json(res, 200, { id, status: n === 1 ? 'SUBMITTED' : 'IN_PROGRESS' });
    const task = tasks.get(id);
    if (task?.video) return json(res, 200, { id, action: 'VIDEO', status: 'SUCCESS', videoUrls: task.shape([0, 1].map((i) => `https://cdn.example.com/${id}/${i}.mp4`)) });
    const images = [0, 1, 2, 3].map((i) => `https://cdn.example.com/${id}/${i}.png`);
    json(res, 200, { id, action: 'IMAGINE', status: 'SUCCESS', imageUrls: (task?.shape ?? up.urlShape)(images) });
  });
  return up;
}

// The benchmark's upstream: a minimal OpenAI-compatible server with precomputed answers, so it
// costs as little as possible on the load generator's core. Streams send CHUNKS content events,
// the usage event when asked for, and [DONE]; with `holdMs` the stream stays open that long after
// its first event (time-to-first-byte runs).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export const CHUNKS = 16;

const completion = Buffer.from(JSON.stringify({
  id: 'chatcmpl-bench', object: 'chat.completion', created: 1700000000, model: 'gpt-4o-mini', service_tier: 'default', system_fingerprint: 'fp_bench',
  choices: [{ index: 0, message: { role: 'assistant', content: 'The quick brown fox jumps over the lazy dog. '.repeat(4), refusal: null, annotations: [] }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 27, completion_tokens: 40, total_tokens: 67, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 } },
}));

const event = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
const base = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-4o-mini', system_fingerprint: 'fp_bench' };
const streamEvents: Buffer[] = [
  ...Array.from({ length: CHUNKS }, (_, i) => Buffer.from(event({ ...base, choices: [{ index: 0, delta: i === 0 ? { role: 'assistant', content: '' } : { content: ' word' }, logprobs: null, finish_reason: null }], usage: null }))),
  Buffer.from(event({ ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }], usage: null })),
  Buffer.from(event({ ...base, choices: [], usage: { prompt_tokens: 27, completion_tokens: CHUNKS, total_tokens: 27 + CHUNKS } })),
  Buffer.from('data: [DONE]\n\n'),
];
const models = Buffer.from(JSON.stringify({ object: 'list', data: [{ id: 'gpt-4o-mini', object: 'model', created: 1, owned_by: 'bench' }] }));

export interface BenchUpstream {
  url: string;
  server: Server;
  holdMs: number;
  close(): Promise<void>;
}

export async function startBenchUpstream(): Promise<BenchUpstream> {
  const state = { holdMs: 0 };
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': models.length }).end(models);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (body.indexOf('"stream":true') === -1) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': completion.length, 'x-request-id': 'req_bench' }).end(completion);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': 'req_bench' });
      const usage = body.indexOf('"include_usage":true') !== -1;
      const events = usage ? streamEvents : streamEvents.filter((_, i) => i !== CHUNKS + 1);
      if (!state.holdMs) {
        for (const e of events) res.write(e);
        res.end();
        return;
      }
      // The first event, then the stream stays open for holdMs before the rest.
      res.write(events[0]);
      setTimeout(() => {
        if (res.destroyed) return;
        for (const e of events.slice(1)) res.write(e);
        res.end();
      }, state.holdMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    server,
    get holdMs() { return state.holdMs; },
    set holdMs(v: number) { state.holdMs = v; },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

// Run as its own process (bench/chat.ts pins it next to the load generator): reports its URL.
if (import.meta.url === `file://${process.argv[1]}`) {
  const up = await startBenchUpstream();
  process.send!({ url: up.url });
  process.on('message', (m: { holdMs?: number }) => {
    if (m.holdMs !== undefined) {
      up.holdMs = m.holdMs;
      process.send!({ ok: true });
    }
  });
  process.on('disconnect', () => void up.close().then(() => process.exit(0)));
}

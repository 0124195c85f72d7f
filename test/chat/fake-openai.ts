// A real HTTP server playing an OpenAI-compatible upstream: /v1/chat/completions (JSON or SSE)
// and /v1/models. It records what it received and whether each response was cut off before
// it finished (the proof that a client disconnect reached the upstream). Steered by the last
// user message: [error400] [error503] [error429] [nonjson] [drop] [hold] [nousage] [tools] [pretty] [slow] (sync: slowMs)
// [big] (a stream of BIG_WORDS: 40 MB, more than the sockets between client and upstream hold).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  raw: string;
  body: any;
}

export const FAKE_USAGE = { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500, prompt_tokens_details: { cached_tokens: 200, audio_tokens: 0 } };
export const WORDS = ['Hello', ' there', ',', ' how', ' can', ' I', ' help', '?'];
export const BIG_WORDS = Array.from({ length: 640 }, (_, i) => `${i} ${'x'.repeat(64 * 1024)}`);

export class FakeOpenAI {
  readonly seen: SeenRequest[] = [];
  /** Responses that closed before they finished: the client side went away. */
  aborted = 0;
  finished = 0;
  modelsCalls = 0;
  models = ['gpt-4o-mini', 'gpt-4o', 'o4-mini', 'unpriced-model', 'text-embedding-3-small'];
  /** Delay between stream chunks. */
  chunkDelayMs = 0;
  /** How long a [slow] sync answer takes. */
  slowMs = 400;
  /** [hold] streams wait here after their first chunk until release() is called. */
  private holds: (() => void)[] = [];
  private holdWaiters: (() => void)[] = [];
  private readonly openSockets = new Set<import('node:net').Socket>();
  private server?: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (s) => {
      this.openSockets.add(s);
      s.on('close', () => this.openSockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  get sockets(): number {
    return this.openSockets.size;
  }

  /** Resolves once a [hold] stream is waiting. */
  waitForHold(): Promise<void> {
    if (this.holds.length) return Promise.resolve();
    return new Promise((r) => this.holdWaiters.push(r));
  }

  release(): void {
    for (const h of this.holds.splice(0)) h();
  }

  async close(): Promise<void> {
    this.release();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: any;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = raw;
    }
    const path = (req.url ?? '/').split('?')[0]!;
    this.seen.push({ method: req.method ?? 'GET', path, headers: req.headers, raw, body });
    res.on('close', () => {
      if (res.writableFinished) this.finished++;
      else this.aborted++;
    });
    if (req.headers.authorization !== 'Bearer sk-upstream-test') return json(res, 401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
    if (req.method === 'GET' && path === '/v1/models') {
      this.modelsCalls++;
      return json(res, 200, { object: 'list', data: this.models.map((id) => ({ id, object: 'model', created: 1700000000, owned_by: 'fake' })) });
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') return json(res, 404, { error: { message: `no route ${path}`, type: 'invalid_request_error', param: null, code: null } });
    const last = body.messages?.[body.messages.length - 1];
    const said = typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
    if (said.includes('[error400]')) return json(res, 400, { error: { message: "This model's maximum context length is 128000 tokens.", type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' }, internal_trace: 'secret-upstream-detail' });
    if (said.includes('[error503]')) return json(res, 503, { error: { message: 'The engine is currently overloaded', type: 'server_error', param: null, code: null } });
    if (said.includes('[error429]')) return json(res, 429, { error: { message: 'Rate limit reached', type: 'requests', param: null, code: 'rate_limit_exceeded' } });
    if (said.includes('[nonjson]')) {
      res.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>');
      return;
    }
    const id = `chatcmpl-${this.seen.length}`;
    const created = 1700000000;
    const toolCall = said.includes('[tools]') || (Array.isArray(body.tools) && body.tools.length > 0 && body.tool_choice !== 'none');
    const usage = said.includes('[nousage]') ? undefined : FAKE_USAGE;
    if (body.stream !== true) {
      if (said.includes('[slow]')) await new Promise((r) => setTimeout(r, this.slowMs));
      if (res.destroyed) return;
      const message = toolCall
        ? { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: body.tools?.[0]?.function?.name ?? 'f', arguments: '{"city":"Paris"}' } }] }
        : { role: 'assistant', content: WORDS.join(''), refusal: null, annotations: [] };
      return json(res, 200, {
        id, object: 'chat.completion', created, model: body.model, service_tier: 'default', system_fingerprint: 'fp_fake',
        choices: [{ index: 0, message, logprobs: null, finish_reason: toolCall ? 'tool_calls' : 'stop' }],
        ...(usage ? { usage } : {}),
      }, { 'x-request-id': 'req_fake_1', 'openai-processing-ms': '12', 'x-ratelimit-remaining-requests': '99', 'set-cookie': 'upstream=1' }, said.includes('[pretty]'));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': 'req_fake_stream', 'cache-control': 'no-cache' });
    const includeUsage = body.stream_options?.include_usage === true;
    const chunk = (delta: unknown, finish: string | null, extra: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, system_fingerprint: 'fp_fake', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(includeUsage ? { usage: null } : {}), ...extra })}\n\n`;
    const events: string[] = [chunk({ role: 'assistant', content: '' }, null)];
    if (toolCall) {
      events.push(chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: body.tools?.[0]?.function?.name ?? 'f', arguments: '' } }] }, null));
      events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }, null));
      events.push(chunk({}, 'tool_calls'));
    } else {
      for (const w of said.includes('[big]') ? BIG_WORDS : WORDS) events.push(chunk({ content: w }, null));
      events.push(chunk({}, 'stop'));
    }
    if (includeUsage && usage) events.push(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [], usage })}\n\n`);
    events.push('data: [DONE]\n\n');
    for (let i = 0; i < events.length; i++) {
      if (res.destroyed) return;
      if (said.includes('[drop]') && i === 3) {
        // Let the three events written so far reach the gateway, then break the connection.
        await new Promise((r) => setTimeout(r, 30));
        res.socket?.destroy();
        return;
      }
      // A client that reads slowly holds the writer back (the gateway's back-pressure reaches here).
      if (!res.write(events[i])) {
        await new Promise<void>((resolve) => {
          const go = () => {
            res.off('drain', go).off('close', go);
            resolve();
          };
          res.on('drain', go).on('close', go);
        });
      }
      if (i === 1 && said.includes('[hold]')) {
        await new Promise<void>((r) => {
          this.holds.push(r);
          for (const w of this.holdWaiters.splice(0)) w();
        });
      } else if (this.chunkDelayMs) {
        await new Promise((r) => setTimeout(r, this.chunkDelayMs));
      }
    }
    res.end();
  }
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}, pretty = false): void {
  const text = pretty ? JSON.stringify(body, null, 3) : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers }).end(text);
}

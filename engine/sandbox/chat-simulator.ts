// The sandbox's side of proxied routes (`kind: sync|stream`): an OpenAI-compatible chat
// upstream replaying the vendor's fixtures (vendors/<vendor>/fixtures/<route id>/):
//   completion.json   the JSON answer of a stream route (chat completion); as SSE when the
//                     request has `stream: true` — its content split into word chunks, then a
//                     finish chunk, the usage chunk when stream_options.include_usage, [DONE]
//   rejected.json     the 400 answer of [sandbox:reject]
//   unavailable.json  the 503 answer of [sandbox:unavailable]
//   list.json         the answer of a list route (models)
// Steering, in the prompt (the descriptor's sandbox.prompt on the request):
//   [sandbox:reject] → 400, [sandbox:unavailable] → 503, [sandbox:member-down] → 503 from the first pool member only, [sandbox:slow] → chunks 250 ms apart,
//   [sandbox:drop] → the stream breaks off after three chunks, [sandbox:tools] (or any request
//   with tools and tool_choice other than none) → the model calls the first tool.
// Fixture text may use {{completion_id}}, {{model}}, {{prompt}} (first 200 characters),
// {{now_s}}, {{prompt_tokens}}, {{completion_tokens}}, {{total_tokens}}.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { compileExpr, type CompiledExpr } from '../util/expr.ts';
import type { LoadedVendor } from '../descriptors/load-descriptors.ts';
import type { Clock } from '../util/clock.ts';
import { randomBase62 } from '../util/ids.ts';

interface ChatRoute {
  kind: 'chat' | 'list';
  method: string;
  path: string;
  fixtures: ReadonlyMap<string, unknown>;
  prompt: CompiledExpr;
}

/** The placeholders completion.json may use (the `check` tool reads this list). */
export const COMPLETION_FIXTURE_VARS = ['completion_id', 'model', 'prompt', 'now_s', 'prompt_tokens', 'completion_tokens', 'total_tokens'] as const;

const CHUNK_MS = 30;
const SLOW_CHUNK_MS = 250;

export class ChatSimulator {
  private readonly routes = new Map<string, ChatRoute>();
  private readonly clock: Clock;

  constructor(vendors: readonly LoadedVendor[], clock: Clock) {
    this.clock = clock;
    for (const v of vendors) {
      const prompt = compileExpr(v.descriptor.sandbox?.prompt ?? 'prompt');
      for (const r of v.descriptor.routes) {
        if ((r.kind !== 'sync' && r.kind !== 'stream') || !r.proxy) continue;
        const path = `/${v.descriptor.vendor}${r.proxy.path}`;
        this.routes.set(`${r.method} ${path}`, { kind: r.proxy.list ? 'list' : 'chat', method: r.method, path, fixtures: v.fixtures.get(r.id) ?? new Map(), prompt });
      }
    }
  }

  /** Answers the request when it is for a proxied route; false otherwise. */
  async handle(req: IncomingMessage, res: ServerResponse, path: string, firstMember = true): Promise<boolean> {
    const route = this.routes.get(`${req.method} ${path}`);
    if (!route) return false;
    if (route.kind === 'list') {
      send(res, 200, route.fixtures.get('list') ?? { object: 'list', data: [] });
      return true;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: Record<string, any>;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      send(res, 400, { error: { message: 'sandbox: the body is not JSON', type: 'invalid_request_error', param: null, code: null } });
      return true;
    }
    const prompt = String((await route.prompt.evaluate(body).catch(() => '')) ?? '');
    if (prompt.includes('[sandbox:reject]')) {
      send(res, 400, route.fixtures.get('rejected') ?? { error: { message: 'rejected by the sandbox', type: 'invalid_request_error', param: null, code: null } });
      return true;
    }
    if (prompt.includes('[sandbox:unavailable]')) {
      send(res, 503, route.fixtures.get('unavailable') ?? { error: { message: 'sandbox: temporarily unavailable', type: 'server_error', param: null, code: null } });
      return true;
    }
    if (firstMember && prompt.includes('[sandbox:member-down]')) {
      send(res, 503, { error: { message: 'sandbox: this pool member is down ([sandbox:member-down])', type: 'server_error', param: null, code: null } });
      return true;
    }
    const completion = this.completion(route, body, prompt);
    if (body.stream === true) await this.stream(res, completion, body, prompt);
    else send(res, 200, completion);
    return true;
  }

  private completion(route: ChatRoute, body: Record<string, any>, prompt: string): Record<string, any> {
    const short = prompt.length > 200 ? `${prompt.slice(0, 200)}…` : prompt;
    const fixture = route.fixtures.get('completion') ?? { choices: [{ index: 0, message: { role: 'assistant', content: 'sandbox' }, finish_reason: 'stop' }] };
    const promptTokens = Math.max(1, Math.ceil(JSON.stringify(body.messages ?? []).length / 4));
    const vars: Record<(typeof COMPLETION_FIXTURE_VARS)[number], string | number> = {
      completion_id: randomBase62(24), model: String(body.model ?? ''), prompt: short, now_s: Math.floor(this.clock.now() / 1000),
      prompt_tokens: promptTokens, completion_tokens: 0, total_tokens: 0,
    };
    const c = fill(fixture, vars) as Record<string, any>;
    const choice = c.choices?.[0];
    const tool = body.tools?.[0];
    if (choice && ((tool && body.tool_choice !== 'none') || prompt.includes('[sandbox:tools]'))) {
      const name = tool?.function?.name ?? tool?.custom?.name ?? 'tool';
      choice.message = { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: `call_${randomBase62(24)}`, type: 'function', function: { name, arguments: '{}' } }] };
      choice.finish_reason = 'tool_calls';
    }
    const text = typeof choice?.message?.content === 'string' ? choice.message.content : '';
    const completionTokens = Math.max(1, text.split(/(?=\s)/).length);
    if (c.usage) {
      c.usage.prompt_tokens = promptTokens;
      c.usage.completion_tokens = completionTokens;
      c.usage.total_tokens = promptTokens + completionTokens;
    }
    return c;
  }

  private async stream(res: ServerResponse, c: Record<string, any>, body: Record<string, any>, prompt: string): Promise<void> {
    const includeUsage = body.stream_options?.include_usage === true;
    const choice = c.choices?.[0] ?? { index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'stop' };
    const base = { id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model, system_fingerprint: c.system_fingerprint };
    const chunk = (delta: unknown, finish: string | null) =>
      `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(includeUsage ? { usage: null } : {}) })}\n\n`;
    const events: string[] = [chunk({ role: 'assistant', content: '' }, null)];
    if (choice.message.tool_calls) {
      for (const [index, call] of (choice.message.tool_calls as any[]).entries()) {
        events.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }, null));
        events.push(chunk({ tool_calls: [{ index, function: { arguments: call.function.arguments } }] }, null));
      }
    } else {
      for (const word of String(choice.message.content ?? '').split(/(?=\s)/)) events.push(chunk({ content: word }, null));
    }
    events.push(chunk({}, choice.finish_reason ?? 'stop'));
    if (includeUsage && c.usage) events.push(`data: ${JSON.stringify({ ...base, choices: [], usage: c.usage })}\n\n`);
    events.push('data: [DONE]\n\n');
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    const gap = prompt.includes('[sandbox:slow]') ? SLOW_CHUNK_MS : CHUNK_MS;
    for (let i = 0; i < events.length; i++) {
      if (res.destroyed) return;
      if (i === 3 && prompt.includes('[sandbox:drop]')) {
        res.destroy();
        return;
      }
      res.write(events[i]);
      if (i < events.length - 1) await new Promise((r) => setTimeout(r, gap));
    }
    res.end();
  }
}

function fill(v: unknown, vars: Record<string, string | number>): unknown {
  if (typeof v === 'string') {
    const whole = /^\{\{(\w+)\}\}$/.exec(v);
    if (whole && whole[1]! in vars) return vars[whole[1]!];
    return v.replace(/\{\{(\w+)\}\}/g, (m, k: string) => (k in vars ? String(vars[k]) : m));
  }
  if (Array.isArray(v)) return v.map((x) => fill(x, vars));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x, vars)]));
  return v;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

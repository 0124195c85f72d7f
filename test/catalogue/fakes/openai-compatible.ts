// OpenAI's API and OpenRouter's OpenAI-compatible one, as their documentation describes them
// (OpenAI: the API reference and github.com/openai/openai-openapi; OpenRouter:
// https://openrouter.ai/docs/api-reference/overview and .../use-cases/usage-accounting):
//   POST <prefix>/chat/completions  JSON, or SSE with `stream: true`. OpenAI sends usage in a last
//        chunk only when stream_options.include_usage is true; OpenRouter always sends it.
//   POST /v1/images/generations     (OpenAI) {created, data: [{b64_json}], usage: {input_tokens, output_tokens}}
//   GET  <prefix>/models            {data: [{id, ...}]}
// Bearer auth. "[refuse]" in the prompt answers 400 with the provider's error object.
import type { ServerResponse } from 'node:http';
import { ProviderFake, type Reply, type Request } from '../harness.ts';

export const USAGE = { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500, prompt_tokens_details: { cached_tokens: 200 } };
export const IMAGE_USAGE = { total_tokens: 4210, input_tokens: 50, output_tokens: 4160, input_tokens_details: { text_tokens: 50, image_tokens: 0 } };

export class OpenAICompatibleFake extends ProviderFake {
  private readonly o: { prefix: string; key: string; usageAlways: boolean; models: string[] };

  constructor(o: { prefix: string; key: string; usageAlways: boolean; models: string[] }) {
    super();
    this.o = o;
  }

  protected handle(req: Request): Reply {
    if (req.headers.authorization !== `Bearer ${this.o.key}`) return { status: 401, body: { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } };
    const prompt = JSON.stringify(req.body ?? {});
    if (prompt.includes('[refuse]')) return { status: 400, body: { error: { message: 'Your request was rejected as a result of our safety system.', type: 'invalid_request_error', param: null, code: 'content_policy_violation' } } };
    if (req.method === 'GET' && req.path === `${this.o.prefix}/models`) return { status: 200, body: { object: 'list', data: this.o.models.map((id) => ({ id, object: 'model', created: 1721172741, owned_by: 'system' })) } };
    if (req.method === 'POST' && req.path === '/v1/images/generations' && this.o.prefix === '/v1') {
      return { status: 200, body: { created: 1713833628, data: [{ b64_json: 'iVBORw0KGgo=' }], background: 'opaque', output_format: 'png', size: '1024x1024', quality: 'high', usage: IMAGE_USAGE } };
    }
    if (req.method === 'POST' && req.path === `${this.o.prefix}/chat/completions`) {
      return { status: 200, body: { id: 'chatcmpl-fake1', object: 'chat.completion', created: 1741569952, model: req.body.model, choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there!' }, finish_reason: 'stop' }], usage: USAGE } };
    }
    return { status: 404, body: { error: { message: 'Not found', type: 'invalid_request_error', param: null, code: null } } };
  }

  /** Streams are written here (the base class answers JSON only). */
  protected override respond(req: Request, res: ServerResponse): boolean {
    if (!(req.method === 'POST' && req.path === `${this.o.prefix}/chat/completions` && req.body?.stream === true)) return false;
    if (req.headers.authorization !== `Bearer ${this.o.key}`) return false;
    const withUsage = this.o.usageAlways || req.body.stream_options?.include_usage === true;
    const chunk = (extra: object) => `data: ${JSON.stringify({ id: 'chatcmpl-fake2', object: 'chat.completion.chunk', created: 1741569952, model: req.body.model, ...extra })}\n\n`;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (this.o.usageAlways) res.write(': OPENROUTER PROCESSING\n\n');
    res.write(chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }] }));
    res.write(chunk({ choices: [{ index: 0, delta: { content: ' there!' }, finish_reason: 'stop' }] }));
    if (withUsage) res.write(chunk({ choices: [], usage: USAGE }));
    res.end('data: [DONE]\n\n');
    return true;
  }
}

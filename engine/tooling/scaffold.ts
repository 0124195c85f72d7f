// `gateway new-vendor <name> --style async|sync|stream`: writes a descriptor and its fixtures
// that pass `gateway check` and run in the sandbox at once, commented so that the person
// onboarding the provider knows what to replace with the provider's real API.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export type ScaffoldStyle = 'async' | 'sync' | 'stream';
export const SCAFFOLD_STYLES: readonly ScaffoldStyle[] = ['async', 'sync', 'stream'];
export const VENDOR_NAME = /^[a-z][a-z0-9_]{0,62}$/;

export interface ScaffoldOptions {
  name: string;
  style: ScaffoldStyle;
  /** The vendors folder (descriptor goes to <dir>/<name>.yaml, fixtures to <dir>/<name>/fixtures/). */
  dir: string;
  force?: boolean;
}

export class ScaffoldError extends Error {}

export interface ScaffoldResult {
  descriptor: string;
  files: string[];
  /** Client paths the new routes answer. */
  routes: string[];
}

export function scaffoldVendor(opts: ScaffoldOptions): ScaffoldResult {
  const { name, style, dir } = opts;
  if (!VENDOR_NAME.test(name)) throw new ScaffoldError(`vendor name "${name}" must match ${VENDOR_NAME.source} (it becomes the path segment /vendors/${name}/)`);
  if (!SCAFFOLD_STYLES.includes(style)) throw new ScaffoldError(`--style must be one of ${SCAFFOLD_STYLES.join(', ')}`);
  const descriptor = join(dir, `${name}.yaml`);
  if (!opts.force && (existsSync(descriptor) || existsSync(join(dir, `${name}.yml`)))) {
    throw new ScaffoldError(`${relative(process.cwd(), descriptor)} already exists (--force overwrites it)`);
  }
  const files: Record<string, string> = style === 'async' ? asyncFiles(name) : proxyFiles(name, style);
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  for (const [rel, text] of Object.entries(files)) {
    const path = join(dir, rel);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, text);
    written.push(path);
  }
  const routes = style === 'async'
    ? [`POST /vendors/${name}/v1/generation`, `GET /vendors/${name}/v1/generation/{task_id}`]
    : style === 'sync' ? [`POST /vendors/${name}/v1/embeddings`] : [`POST /vendors/${name}/v1/chat/completions`];
  return { descriptor, files: written, routes };
}

const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;

function asyncFiles(name: string): Record<string, string> {
  const id = '{{upstream_task_id}}';
  const f = `${name}/fixtures/generation`;
  return {
    [`${name}.yaml`]: asyncDescriptor(name, `${name.replace(/_/g, '-')}-image-1`),
    [`${f}/created.json`]: json({ request_id: `req-${id}`, output: { task_id: id, status: 'QUEUED' } }),
    [`${f}/queued.json`]: json({ request_id: `req-${id}`, output: { task_id: id, status: 'QUEUED', submit_time: '{{now_iso}}' } }),
    [`${f}/running.json`]: json({ request_id: `req-${id}`, output: { task_id: id, status: 'RUNNING', submit_time: '{{now_iso}}' } }),
    [`${f}/succeeded.json`]: json({
      request_id: `req-${id}`,
      output: { task_id: id, status: 'SUCCEEDED', submit_time: '{{now_iso}}', end_time: '{{now_iso}}', results: [{ url: `{{files_url}}/${id}/0.png` }] },
      usage: { image_count: 1 },
    }),
    [`${f}/cancelled.json`]: json({ request_id: `req-${id}`, output: { task_id: id, status: 'CANCELED', end_time: '{{now_iso}}' } }),
    [`${f}/failed.json`]: json({
      request_id: `req-${id}`,
      output: { task_id: id, status: 'FAILED', code: 'DataInspectionFailed', message: 'The input was rejected by content inspection.', end_time: '{{now_iso}}' },
    }),
  };
}

/** The async scaffold's descriptor: a generic submit/poll image provider, commented for the one who adapts it. */
function asyncDescriptor(name: string, model: string): string {
  return `# ${name}: scaffolded by \`gateway new-vendor ${name} --style async\`.
# An asynchronous image provider: the client's POST creates a task upstream, the gateway polls
# it until it ends, and GET /vendors/${name}/v1/generation/{task_id} answers task_info + images.
# The upstream modelled here is a generic "submit/poll" JSON API. Replace paths, mappings,
# prices and fixtures (${name}/fixtures/) with the provider's real ones, then run
# \`npx gateway check\`: it says what no longer fits, with file:line:col.
format: 1
vendor: ${name}
title: ${name} image generation (scaffold)
upstream:
  # Credentials are named here; their values come from config.yaml:
  #   upstreams: { ${name}: { base_url: https://..., credentials: { api_key: \${${name.toUpperCase()}_API_KEY} } } }
  auth: { scheme: bearer, credential: api_key }
  timeout_ms: 30000
  errors:
    # Upstream failures onto service codes (first match wins; unmatched ones use the defaults).
    - when: stage = 'task' and body.output.code = 'DataInspectionFailed'
      code: 3005
      reason: content inspection refused the input after the task was accepted
sandbox:
  prompt: input.prompt     # where the sandbox finds the prompt in the upstream body ({{prompt}} in fixtures)

routes:
  - id: generation
    kind: async
    summary: Image generation
    method: POST
    path: /v1/generation
    status: 202
    model_name: ${model}
    max_execution_ms: 600000        # safety net: a task still running then fails with 4008
    request:
      schema:
        type: object
        additionalProperties: false
        required: [prompt]
        properties:
          prompt: { type: string, minLength: 1, maxLength: 2000, description: What to draw. }
          size: { type: string, enum: ["1024*1024", "1280*720", "720*1280"], default: "1024*1024", description: Output size in pixels. }
          n: { type: integer, minimum: 1, maximum: 4, default: 1, description: Number of images. }
          seed: { type: integer, minimum: 0, maximum: 2147483647 }
      examples:
        - { prompt: "a red bicycle against a white wall" }
        - { prompt: "a red bicycle, studio light", size: "1280*720", n: 4 }
    upstream:
      submit:
        path: /api/v1/generations
        # JSONata on the validated request (defaults filled in); fields left undefined are omitted.
        body: '{ "model": "${model}", "input": { "prompt": prompt }, "parameters": { "size": size, "n": n, "seed": seed } }'
        task_id: output.task_id
      poll:
        path: /api/v1/generations/{upstream_task_id}
        interval_ms: 2000
        status: output.status
        status_map: { QUEUED: pending, RUNNING: processing, SUCCEEDED: completed, FAILED: failed, CANCELED: failed }
        error_message: output.message
        error_code: output.code
      # Required: what a cancel does upstream. This request is sent once, best-effort, when the
      # client cancels the task (POST .../generation/{task_id}/cancel, 4009) and when the safety
      # net fails it (4008), with the poll's base URL and auth; the task's failure and the release
      # of its hold never wait for it. fixtures/generation/cancelled.json is what polls answer
      # after it. A provider without a cancel: \`cancel: local\` (the task ends on the gateway
      # only, hold released; the provider may still finish and bill it), or \`cancel: none\` (a
      # client's cancel is refused with 409 / 2006 and the task runs on).
      cancel:
        method: POST                      # or DELETE, PUT
        path: /api/v1/generations/{upstream_task_id}/cancel
    result:
      images: output.results.url
    pricing:
      unit: image
      unit_price:
        by: size
        table: { "1024*1024": "0.04", "1280*720": "0.05", "720*1280": "0.05" }
      quantity: n                            # held at creation
      settle_quantity: $count($result.images)  # billed on success: the images delivered
      note: scaffold prices; replace them with the provider's
`;
}

function proxyFiles(name: string, style: 'sync' | 'stream'): Record<string, string> {
  const stream = style === 'stream';
  const id = stream ? 'chat_completions' : 'embeddings';
  const path = stream ? '/v1/chat/completions' : '/v1/embeddings';
  const model = stream ? `${name.replace(/_/g, '-')}-chat-1` : `${name.replace(/_/g, '-')}-embed-1`;
  const schema = proxyRequestSchema(stream, model);
  const yaml = `# ${name}: scaffolded by \`gateway new-vendor ${name} --style ${style}\`.
# A ${stream ? 'chat provider answering at once, or as server-sent events when `stream` is true' : 'synchronous provider: the request is validated, passed on, and the answer passed back'}.
# The upstream modelled here is OpenAI-compatible. Replace paths, fields, prices and fixtures
# (${name}/fixtures/) with the provider's real ones, then run \`npx gateway check\`.
format: 1
vendor: ${name}
title: ${name} ${stream ? 'chat' : 'embeddings'} (scaffold)
upstream:
  # Credentials are named here; their values come from config.yaml:
  #   upstreams: { ${name}: { base_url: https://..., credentials: { api_key: \${${name.toUpperCase()}_API_KEY} } } }
  auth: { scheme: bearer, credential: api_key }
  timeout_ms: 60000
${stream ? `sandbox:\n  prompt: "$string(messages[-1].content)"\n` : 'sandbox:\n  prompt: "$string(input)"\n'}
routes:
  - id: ${id}
    kind: ${style}
    summary: ${stream ? 'Chat completion (JSON, or server-sent events when `stream` is true)' : 'Text embeddings'}
    method: POST
    path: ${path}
    status: 200
    request:
      schema:
${schema}
    proxy:
      path: ${path}
      model: model
${stream ? `      stream:
        flag: stream
        usage_option: stream_options.include_usage
` : ''}      usage:
        input: usage.prompt_tokens
        output: usage.${stream ? 'completion_tokens' : 'total_tokens'}
      error_object: error
      # USD per 1M tokens; a model missing here is refused (2003). Scaffold prices: replace them.
      token_prices:
        models:
          ${model}: { input: "0.10", output: "${stream ? '0.40' : '0'}" }
`;
  const f = `${name}/fixtures/${id}`;
  const files: Record<string, string> = { [`${name}.yaml`]: yaml };
  if (stream) {
    files[`${f}/response.json`] = json({
      id: 'chatcmpl-{{upstream_task_id}}', object: 'chat.completion', created: '{{now_s}}', model,
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the sandbox.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 9, completion_tokens: 6, total_tokens: 15 },
    });
    files[`${f}/stream.json`] = json([
      { id: 'chatcmpl-{{upstream_task_id}}', object: 'chat.completion.chunk', created: '{{now_s}}', model, choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }] },
      { id: 'chatcmpl-{{upstream_task_id}}', object: 'chat.completion.chunk', created: '{{now_s}}', model, choices: [{ index: 0, delta: { content: ' from the sandbox.' }, finish_reason: 'stop' }] },
      { id: 'chatcmpl-{{upstream_task_id}}', object: 'chat.completion.chunk', created: '{{now_s}}', model, choices: [], usage: { prompt_tokens: 9, completion_tokens: 6, total_tokens: 15 } },
    ]);
  } else {
    files[`${f}/response.json`] = json({
      object: 'list', model,
      data: [{ object: 'embedding', index: 0, embedding: [0.0123, -0.0456, 0.0789] }],
      usage: { prompt_tokens: 4, total_tokens: 4 },
    });
  }
  return files;
}

/** The proxy scaffold's request schema and examples (YAML, indented for its place in the descriptor). */
function proxyRequestSchema(stream: boolean, model: string): string {
  return stream
    ? `        type: object
        additionalProperties: false
        required: [model, messages]
        properties:
          model: { type: string, minLength: 1 }
          messages:
            type: array
            minItems: 1
            items:
              type: object
              additionalProperties: false
              required: [role, content]
              properties:
                role: { enum: [system, user, assistant] }
                content: { type: string }
          temperature: { type: number, minimum: 0, maximum: 2 }
          max_tokens: { type: integer, minimum: 1 }
          stream: { type: boolean, default: false }
          stream_options:
            type: object
            additionalProperties: false
            properties: { include_usage: { type: boolean } }
      examples:
        - { model: ${model}, messages: [{ role: user, content: "Say hello" }] }
        - { model: ${model}, stream: true, messages: [{ role: user, content: "Count to five" }] }`
    : `        type: object
        additionalProperties: false
        required: [model, input]
        properties:
          model: { type: string, minLength: 1 }
          input:
            anyOf:
              - { type: string, minLength: 1 }
              - { type: array, minItems: 1, maxItems: 64, items: { type: string, minLength: 1 } }
      examples:
        - { model: ${model}, input: "a red bicycle" }
        - { model: ${model}, input: ["a red bicycle", "a blue car"] }`;
}

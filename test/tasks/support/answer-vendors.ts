// Two descriptors written the way the public queue APIs they stand for work, for the tests of
// the descriptor features (test/tasks/descriptor-features.test.ts), with the fixtures serve
// needs: `qfal`, a fal.ai-style queue (the submit answer names status_url / response_url /
// cancel_url; the output is fetched from response_url once COMPLETED; COMPLETED with an error
// field is a failure; the callback URL goes in the fal_webhook query parameter; a result URL
// asked too early answers 400), and `qveo`, a Gemini-style long-running operation (the id is
// the path `models/<model>/operations/<id>`; done:true without samples is a filtered video,
// 3005; no cancel: `none`).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const QFAL = `
format: 1
vendor: qfal
upstream:
  auth: { scheme: header, header: Authorization, prefix: "Key ", credential: api_key }
  errors:
    - when: stage = 'result' and http_status = 422
      code: 3002
      detail: "'The provider refused the input: ' & body.detail[0].msg"
routes:
  - id: image
    kind: async
    method: POST
    path: /v1/image
    model_name: qfal-image
    max_execution_ms: 600000
    request:
      schema: { type: object, additionalProperties: false, required: [prompt], properties: { prompt: { type: string, minLength: 1 } } }
      examples: [{ prompt: "a fox" }]
    upstream:
      submit:
        path: /fal-ai/flux/dev
        body: '{ "prompt": prompt }'
        task_id: request_id
        urls: { status: status_url, result: response_url, cancel: cancel_url }
      poll:
        path: "{url:status}"
        interval_ms: 1000
        status: "status = 'COMPLETED' and $exists(error) ? 'ERROR' : status"
        status_map: { IN_QUEUE: pending, IN_PROGRESS: processing, COMPLETED: completed, ERROR: failed }
        error_message: error
      result: { path: "{url:result}" }
      cancel: { method: PUT, path: "{url:cancel}" }
      callback: { url_query: fal_webhook, status: "status = 'OK' ? 'COMPLETED' : 'ERROR'" }
    result:
      images: images
      seed: { from: seed, optional: true }
    pricing: { unit: image, unit_price: "0.025", quantity: "4", settle_quantity: "$count($upstream.images)" }
  - id: image_direct
    kind: async
    method: POST
    path: /v1/image-direct
    model_name: qfal-image
    max_execution_ms: 600000
    request:
      schema: { type: object, additionalProperties: false, required: [prompt], properties: { prompt: { type: string, minLength: 1 } } }
      examples: [{ prompt: "a fox" }]
    upstream:
      submit:
        path: /fal-ai/flux/schnell
        body: '{ "prompt": prompt }'
        task_id: request_id
        urls: { result: response_url }
      poll:
        # The result URL itself: 400 while the request is still in progress.
        path: "{url:result}"
        interval_ms: 1000
        status: "$http_status = 400 ? 'IN_PROGRESS' : $http_status = 422 ? 'ERROR' : 'COMPLETED'"
        status_map: { IN_PROGRESS: processing, COMPLETED: completed, ERROR: failed }
        error_message: detail[0].msg
      cancel: local
    result:
      images: images
    pricing: { unit: image, unit_price: "0.01", quantity: "1" }
`;

const QVEO = `
format: 1
vendor: qveo
upstream:
  auth: { scheme: header, header: x-goog-api-key, credential: api_key }
  errors:
    - when: stage = 'task' and body.done = true and $not($exists(body.error))
      code: 3005
      detail: '"The provider filtered the video: no sample was returned."'
routes:
  - id: video
    kind: async
    method: POST
    path: /v1/video
    model_name: qveo-video
    max_execution_ms: 600000
    request:
      schema: { type: object, additionalProperties: false, required: [prompt], properties: { prompt: { type: string, minLength: 1 } } }
      examples: [{ prompt: "a fox" }]
    upstream:
      submit:
        path: /v1beta/models/veo-3.0-generate-001:predictLongRunning
        body: '{ "instances": [{ "prompt": prompt }] }'
        task_id: name
      poll:
        path: /v1beta/{upstream_task_id:path}
        interval_ms: 1000
        status: "done = true ? ($exists(error) ? 'ERROR' : ($exists(response.generateVideoResponse.generatedSamples) ? 'DONE' : 'FILTERED')) : 'RUNNING'"
        status_map: { RUNNING: processing, DONE: completed, ERROR: failed, FILTERED: failed }
        error_message: error.message
      cancel: none
    result:
      videos: response.generateVideoResponse.generatedSamples.video.uri
    pricing: { unit: task, unit_price: "0.50", quantity: "1" }
`;

const ID = '{{upstream_task_id}}';
const falUrls = (model: string) => ({
  status_url: `{{base_url}}/fal-ai/flux/requests/${ID}/status`,
  response_url: `{{base_url}}/fal-ai/flux/requests/${ID}`,
  cancel_url: `{{base_url}}/fal-ai/flux/requests/${ID}/cancel`,
  request_id: ID,
  model,
});

const FIXTURES: Record<string, Record<string, Record<string, unknown>>> = {
  'qfal/image': {
    created: falUrls('dev'),
    queued: { $status: 202, $body: { status: 'IN_QUEUE', queue_position: 0 } },
    running: { $status: 202, $body: { status: 'IN_PROGRESS' } },
    succeeded: { status: 'COMPLETED' },
    failed: { status: 'COMPLETED', error: 'Internal error while generating' },
    cancelled: { status: 'COMPLETED', error: 'Request was cancelled' },
    result: { images: [{ url: `{{files_url}}/${ID}/0.png` }], seed: 42 },
  },
  'qfal/image_direct': {
    created: falUrls('schnell'),
    running: { $status: 400, $body: { detail: 'Request is still in progress' } },
    succeeded: { images: [{ url: `{{files_url}}/${ID}/0.png` }] },
    failed: { $status: 422, $body: { detail: [{ msg: 'The prompt was refused' }] } },
  },
  'qveo/video': {
    created: { name: `models/veo-3.0-generate-001/operations/${ID}` },
    running: { name: `models/veo-3.0-generate-001/operations/${ID}`, done: false },
    succeeded: { name: `models/veo-3.0-generate-001/operations/${ID}`, done: true, response: { generateVideoResponse: { generatedSamples: [{ video: { uri: `{{files_url}}/${ID}/0.mp4` } }] } } },
    failed: { name: `models/veo-3.0-generate-001/operations/${ID}`, done: true, error: { code: 13, message: 'Internal error' } },
  },
};

/** A vendors folder holding qfal and qveo with their fixtures. */
export function answerVendorsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-answers-'));
  writeFileSync(join(dir, 'qfal.yaml'), QFAL);
  writeFileSync(join(dir, 'qveo.yaml'), QVEO);
  for (const [route, byName] of Object.entries(FIXTURES)) {
    const [vendor, id] = route.split('/') as [string, string];
    mkdirSync(join(dir, vendor, 'fixtures', id), { recursive: true });
    for (const [name, body] of Object.entries(byName)) writeFileSync(join(dir, vendor, 'fixtures', id, `${name}.json`), JSON.stringify(body));
  }
  return dir;
}

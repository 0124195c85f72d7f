// Each event type is defined once, in engine/events/types.ts: what the gateway really emits
// matches the `data` schema defined there, the OpenAPI document's `webhooks` lists exactly those
// types with exactly those schemas, and the console's form reads the same list from the API.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { lowBalanceData } from '../../engine/billing/low-balance.ts';
import { buildOpenApi } from '../../engine/docs/openapi.ts';
import type { GatewayEvent } from '../../engine/events/bus.ts';
import { COMPONENT, EVENT_DEFINITIONS, EVENT_TYPES, TASK_EVENTS, type EventType } from '../../engine/events/types.ts';
import type { Gateway } from '../../engine/gateway.ts';
import { buildTestEvent } from '../../engine/webhooks/test-event.ts';
import { call, DEMO_KEY, ROOT, startTestGateway, waitForTask } from '../helpers/gateway.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const D = '/vendors/provider_d/v1/model_d/generation';

describe('event types (engine/events/types.ts)', () => {
  let gw: Gateway;
  const emitted: GatewayEvent[] = [];
  let validate: (type: EventType, data: unknown) => string | undefined;

  before(async () => {
    gw = await startTestGateway();
    gw.bus.subscribe((e) => void emitted.push(e));
    // The schemas `$ref` the OpenAPI document's shared components: validate against them there.
    const components = (buildOpenApi(gw.vendors.map((v) => v.loaded.descriptor)) as { components: { schemas: Record<string, object> } }).components.schemas;
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    for (const [name, schema] of Object.entries(components)) ajv.addSchema(schema, `${COMPONENT}${name}`);
    const compiled = new Map(EVENT_TYPES.map((t) => [t, ajv.compile(EVENT_DEFINITIONS[t].data)]));
    validate = (type, data) => {
      const check = compiled.get(type)!;
      return check(data) ? undefined : ajv.errorsText(check.errors);
    };
  });
  after(() => gw.close());

  it('every event a task emits matches its type\'s schema (created, succeeded, failed)', async () => {
    const done = await call(gw.url, 'POST', D, { key: DEMO_KEY, body: { prompt: 'a lighthouse' } });
    const cancelled = await call(gw.url, 'POST', D, { key: DEMO_KEY, body: { prompt: 'a harbour' } });
    expect([done.status, cancelled.status]).to.deep.equal([202, 202]);
    expect((await call(gw.url, 'POST', `${D}/${cancelled.body.task_info.id}/cancel`, { key: DEMO_KEY })).status).to.equal(200);
    await waitForTask(gw.url, `${D}/${done.body.task_info.id}`, DEMO_KEY);
    const ids = [done.body.task_info.id, cancelled.body.task_info.id];
    const mine = () => emitted.filter((e) => ids.includes((e.data.payload as { task_info: { id: string } }).task_info.id));
    for (const deadline = Date.now() + 5000; mine().length < 4 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 10));
    expect(mine().map((e) => e.type).sort()).to.deep.equal([TASK_EVENTS.failed, TASK_EVENTS.created, TASK_EVENTS.created, TASK_EVENTS.completed].sort());
    for (const e of mine()) expect(validate(e.type, e.data), `${e.type}: ${JSON.stringify(e.data)}`).to.equal(undefined);
  });

  it('balance.low and the console\'s test event match their schemas', () => {
    expect(validate('balance.low', lowBalanceData('7f1d1a9e-5a3b-4c1e-9d1f-0a2b3c4d5e6f', -1234, 100_000))).to.equal(undefined);
    const test = buildTestEvent('tenant', { now: () => Date.now() });
    expect(validate(test.type, test.data)).to.equal(undefined);
    // The schemas are not vacuous, and their $refs resolve: a task event without its vendor, or
    // whose task_info lacks the component's required fields, is refused.
    const info = { id: '7f1d1a9e-5a3b-4c1e-9d1f-0a2b3c4d5e6f', status: 'pending', created_at: new Date().toISOString(), updated_at: new Date().toISOString() };
    expect(validate('task.created', { vendor: 'v', model_name: 'm', payload: { task_info: info } })).to.equal(undefined);
    expect(validate('task.created', { model_name: 'm', payload: { task_info: info } })).to.include('vendor');
    expect(validate('task.created', { vendor: 'v', model_name: 'm', payload: { task_info: { status: 'pending' } } })).to.include('id');
  });

  it('the OpenAPI document lists exactly these event types, each with its schema', async () => {
    const doc = (await call(gw.url, 'GET', '/openapi.json')).body;
    expect(Object.keys(doc.webhooks)).to.deep.equal([...EVENT_TYPES]);
    expect(doc.components.schemas.event_envelope.properties.type.enum).to.deep.equal([...EVENT_TYPES]);
    for (const type of EVENT_TYPES) {
      const item = doc.webhooks[type].post;
      expect(item.summary).to.equal(EVENT_DEFINITIONS[type].summary);
      const schema = item.requestBody.content['application/json'].schema;
      expect(schema.description).to.equal(EVENT_DEFINITIONS[type].description);
      expect(schema.allOf[1].properties).to.deep.equal({ type: { const: type }, data: EVENT_DEFINITIONS[type].data });
    }
  });

  it('the console reads the event types from the API, and keeps no list of its own', async () => {
    const listed = await call(gw.url, 'GET', '/v1/webhooks/event-types', { key: DEMO_KEY });
    expect(listed.status).to.equal(200);
    expect(listed.body.data.map((t: { type: string }) => t.type)).to.deep.equal([...EVENT_TYPES]);
    expect(listed.body.data[0]).to.deep.equal({ type: 'task.created', summary: EVENT_DEFINITIONS['task.created'].summary, description: EVENT_DEFINITIONS['task.created'].description });
    expect((await call(gw.url, 'GET', '/v1/webhooks/event-types')).status).to.equal(401);
    const page = readFileSync(`${ROOT}console/pages/webhooks.js`, 'utf8');
    expect(page).to.include('/v1/webhooks/event-types');
    for (const type of EVENT_TYPES.filter((t) => !t.startsWith('task.'))) expect(page, `console/pages/webhooks.js names ${type}`).not.to.include(type);
  });
});

// `gateway openapi` and GET /openapi.json: the document validates against the OpenAPI 3.1
// schema, and each route's request example, sent to a running gateway, passes the gateway's
// own validation. The docs page and its assets are served from the installed package.
import SwaggerParser from '@apidevtools/swagger-parser';
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { buildOpenApi } from '../../engine/docs/openapi.ts';
import { folderSet } from '../../engine/tooling/sources.ts';
import { call, DEMO_KEY, startTestGateway } from '../helpers/gateway.ts';
import { cleanTempDirs, cli, vendorsDir } from '../tooling/support.ts';

type Doc = Record<string, any>;

function operations(doc: Doc): { path: string; method: string; op: any }[] {
  const out: { path: string; method: string; op: any }[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, any>)) {
    for (const [method, op] of Object.entries(item)) out.push({ path, method, op });
  }
  return out;
}

describe('gateway openapi', () => {
  after(cleanTempDirs);

  it('generates a valid OpenAPI 3.1 document for the scaffolds of every style', async () => {
    const dir = vendorsDir([{ name: 'acme' }, { name: 'acme_sync', style: 'sync' }, { name: 'acme_chat', style: 'stream' }]);
    const doc: Doc = buildOpenApi([...folderSet(dir).vendors.values()].map((v) => v.descriptor));
    await SwaggerParser.validate(structuredClone(doc) as any);
    expect(doc.openapi).to.equal('3.1.0');
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/vendors/')).sort()).to.deep.equal([
      '/vendors/acme/v1/generation',
      '/vendors/acme/v1/generation/{task_id}',
      '/vendors/acme/v1/generation/{task_id}/cancel',
      '/vendors/acme_chat/v1/chat/completions',
      '/vendors/acme_sync/v1/embeddings',
    ]);
    const create = doc.paths['/vendors/acme/v1/generation'].post;
    expect(create.requestBody.content['application/json'].schema).to.deep.equal({ $ref: '#/components/schemas/acme_generation_request' });
    expect(Object.keys(create.responses).sort()).to.deep.equal(['202', '400', '401', '402', '403', '413', '415', '429', '500', '503']);
    expect(create.responses['503']['x-error-codes']).to.deep.equal([4003]);
    // The 400 lists the codes this schema can produce under the engine's error policy.
    expect(create.responses['400']['x-error-codes']).to.deep.equal([2001, 2002, 2003, 2004]);
    expect(create.responses['400'].content['application/problem+json'].schema.allOf[1].properties.error_code.enum).to.deep.equal([2001, 2002, 2003, 2004]);
    expect(create.responses['402']['x-error-codes']).to.deep.equal([1003]);
    const read = doc.paths['/vendors/acme/v1/generation/{task_id}'].get;
    expect(read.responses['404']['x-error-codes']).to.deep.equal([2005]);
    const cancel = doc.paths['/vendors/acme/v1/generation/{task_id}/cancel'].post;
    expect(Object.keys(cancel.responses).sort()).to.deep.equal(['200', '400', '401', '403', '404', '409', '429', '500', '503']);
    expect(cancel.responses['409']['x-error-codes']).to.deep.equal([2000]);
    expect(cancel.requestBody).to.equal(undefined);
    expect(doc.components.schemas.acme_generation_task.properties.images).to.deep.include({ type: 'array' });
    expect(doc.paths['/vendors/acme_chat/v1/chat/completions'].post.responses['200'].content).to.have.keys('application/json', 'text/event-stream');
    expect(doc.components.securitySchemes.bearer).to.include({ type: 'http', scheme: 'bearer' });
    expect(doc.security).to.deep.equal([{ bearer: [] }]);
    expect(Object.keys(doc.webhooks)).to.deep.equal(['task.created', 'task.succeeded', 'task.failed', 'balance.low']);
  });

  it('describes the console routes (docs/console-api.md): sessions and the tenant self-service API', async () => {
    const doc: Doc = buildOpenApi([]);
    await SwaggerParser.validate(structuredClone(doc) as any);
    const methods = (path: string) => Object.keys(doc.paths[path] ?? {}).sort();
    expect(methods('/console/v1/session')).to.deep.equal(['delete', 'get', 'post']);
    expect(methods('/console/v1/admin-session')).to.deep.equal(['delete', 'get', 'post']);
    expect(methods('/v1/keys')).to.deep.equal(['get', 'post']);
    expect(methods('/v1/keys/{id}')).to.deep.equal(['delete']);
    for (const p of ['/v1/tasks', '/v1/tasks/{id}', '/v1/usage', '/v1/balance', '/v1/ledger']) expect(methods(p), p).to.deep.equal(['get']);
    expect(doc.paths['/v1/keys'].post.security).to.deep.include({ console_session: [] });
    expect(doc.paths['/v1/keys'].post.responses['403']['x-error-codes']).to.deep.equal([1002]);
    expect(doc.paths['/v1/ledger'].get.responses['200'].content).to.have.keys('application/json', 'text/csv');
    expect(doc.paths['/console/v1/session'].post.security).to.deep.equal([]);
    expect(doc.components.securitySchemes.console_session).to.include({ type: 'apiKey', in: 'cookie', name: 'gw_session' });
    expect(doc.components.schemas.console_usage.required).to.deep.equal(['from', 'to', 'data', 'total_credits']);
  });

  it('bundles shared schemas that request schemas $ref, and the document still validates', async () => {
    const dir = vendorsDir();
    const set = folderSet(dir);
    const d = set.vendors.get('acme')!.descriptor as any;
    d.routes[0].request.schema.properties.seed = { $ref: '/schemas/vendor.schema.json#/$defs/expr' };
    const doc: Doc = buildOpenApi([d]);
    await SwaggerParser.validate(structuredClone(doc) as any);
    expect(doc.components.schemas.acme_generation_request.properties.seed).to.deep.equal({ $ref: '#/components/schemas/shared_vendor/$defs/expr' });
    expect(doc.components.schemas.shared_vendor.$defs.expr).to.include({ type: 'string' });
  });

  describe('served by the gateway, for the repository vendors', () => {
    let gw: Gateway;
    let doc: Doc;
    before(async () => {
      gw = await startTestGateway();
      const r = await call(gw.url, 'GET', '/openapi.json');
      expect(r.status).to.equal(200);
      doc = r.body;
    });
    after(() => gw?.close());

    it('GET /openapi.json validates against the OpenAPI 3.1 schema and covers every route', async () => {
      await SwaggerParser.validate(structuredClone(doc) as any);
      for (const v of gw.vendors) {
        for (const route of v.routes) {
          const path = route.kind === 'status' ? `${route.path}/{task_id}` : route.path;
          expect(doc.paths, `${route.key}`).to.have.property(path);
          // Every path that reads a task cancels it too.
          if (route.kind === 'async' || route.kind === 'status') expect(doc.paths[`${route.path}/{task_id}/cancel`], route.key).to.have.property('post');
        }
      }
    });

    it('a request built from each route\'s example passes the gateway\'s own validation', async () => {
      let tried = 0;
      for (const { path, method, op } of operations(doc)) {
        const examples = op.requestBody?.content?.['application/json']?.examples ?? {};
        const plan = gw.vendors.flatMap((v) => v.routes).find((r: any) => r.path === path || r.aliases?.includes(path)) as any;
        for (const [name, ex] of Object.entries(examples as Record<string, { value: unknown }>)) {
          tried++;
          if (plan?.kind === 'async') {
            // Through the HTTP surface: the documented success status, a task in status pending.
            const r = await call(gw.url, method.toUpperCase(), path, { key: DEMO_KEY, body: ex.value });
            const success = Object.keys(op.responses).find((s) => s.startsWith('2'));
            expect(r.status, `${method} ${path} ${name}: ${r.text}`).to.equal(Number(success));
            expect(r.body.task_info.status).to.equal('pending');
          } else {
            // Proxied routes would call the upstream: their validator is exercised directly.
            expect(plan?.validate, `${path} has a validator`).to.be.a('function');
            await plan.validate(structuredClone(ex.value));
          }
        }
      }
      expect(tried).to.be.greaterThan(3);
    });

    it('serves a docs page and its renderer from the installed package', async () => {
      const page = await fetch(`${gw.url}/docs`);
      expect(page.status).to.equal(200);
      expect(page.headers.get('content-type')).to.match(/text\/html/);
      const html = await page.text();
      expect(html).to.contain('/docs/assets/swagger-ui-bundle.js');
      expect(html).to.not.match(/https?:\/\//); // nothing from the network
      for (const asset of ['/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-ui.css', '/docs/init.js']) {
        const r = await fetch(`${gw.url}${asset}`);
        expect(r.status, asset).to.equal(200);
        expect((await r.arrayBuffer()).byteLength, asset).to.be.greaterThan(100);
      }
      expect((await fetch(`${gw.url}/docs/assets/package.json`)).status).to.equal(404);
    });
  });

  it('the CLI prints the same document', () => {
    const r = cli(['openapi']);
    expect(r.status).to.equal(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.openapi).to.equal('3.1.0');
    expect(Object.keys(doc.paths).length).to.be.greaterThan(0);
  });
});

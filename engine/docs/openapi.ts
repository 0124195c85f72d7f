// An OpenAPI 3.1 document generated from the descriptors: each route's request schema (with the
// shared schemas/ it `$ref`s bundled under components: ./schema-bundle.ts), its operations and
// the RFC 9457 problem bodies with the service codes each can answer (./openapi-operations.ts,
// named from the catalogue: ./problems.ts), the task_info and result responses and the webhook
// event payloads as `webhooks` (./openapi-components.ts), bearer security, and the console's
// routes (./console-openapi.ts). `gateway openapi` prints it; the running gateway serves it at
// /openapi.json (engine/http/openapi-routes.ts).
import { readFileSync } from 'node:fs';
import type { RouteSpec, VendorDescriptor } from '../descriptors/types.ts';
import { isObject, registryFromDir, requestSchemaBase, type JsonObject, type SchemaRegistry } from '../validation/json-schema.ts';
import { CONSOLE_SECURITY_SCHEMES, consolePaths, consoleSchemas } from './console-openapi.ts';
import { baseComponents, taskResponseSchema, webhookItems } from './openapi-components.ts';
import { cancelOperation, createOperation, proxyOperation, readOperation } from './openapi-operations.ts';
import { COMPONENT } from './problems.ts';
import { SchemaBundle } from './schema-bundle.ts';
import { validationCodesOf } from './validation-codes.ts';

export interface OpenApiOptions {
  title?: string;
  version?: string;
  /** `servers[0].url` (default "/": the gateway serving the document). */
  serverUrl?: string;
  registry?: SchemaRegistry;
}

type Doc = JsonObject;

export function buildOpenApi(descriptors: readonly VendorDescriptor[], opts: OpenApiOptions = {}): Doc {
  const schemas: JsonObject = baseComponents();
  const bundle = new SchemaBundle(opts.registry ?? registryFromDir(), schemas);
  const paths: JsonObject = {};
  const tags: JsonObject[] = [];
  for (const d of descriptors) {
    tags.push({ name: d.vendor, description: d.title ?? d.description ?? d.vendor });
    for (const r of d.routes) addRoute(d, r, { paths, schemas, bundle });
  }
  Object.assign(paths, consolePaths());
  Object.assign(schemas, consoleSchemas());
  tags.push({ name: 'console', description: 'The tenant self-service API the console calls (API key or console session); docs/console-api.md' });
  return {
    openapi: '3.1.0',
    info: {
      title: opts.title ?? 'Model gateway API',
      version: opts.version ?? packageVersion(),
      description:
        'One base address and one API key for many model providers. Asynchronous routes answer a POST with `task_info` ' +
        '(status `pending`); GET the same path followed by `/{task_id}` for the latest status and, once `completed`, the result ' +
        'fields beside `task_info`; POST `/{task_id}/cancel` cancels a task that has not finished. Errors are RFC 9457 problem bodies carrying a service `error_code`. ' +
        'Generated from the vendor descriptors.',
    },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    servers: [{ url: opts.serverUrl ?? '/' }],
    security: [{ bearer: [] }],
    tags,
    paths,
    webhooks: webhookItems(),
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY>. One key is valid for every provider.' },
        ...CONSOLE_SECURITY_SCHEMES,
      },
      schemas,
    },
  };
}

/** One route's request schema, task response and operations, added to the document. */
function addRoute(d: VendorDescriptor, r: RouteSpec, doc: { paths: JsonObject; schemas: JsonObject; bundle: SchemaBundle }): void {
  const { paths, schemas } = doc;
  const id = `${d.vendor}_${r.id}`;
  const clientPath = `/vendors/${d.vendor}${r.path}`;
  let requestRef: string | undefined;
  if (r.request?.schema) {
    const name = `${id}_request`;
    schemas[name] = doc.bundle.rewrite(r.request.schema, requestSchemaBase(d.vendor, r.id), name);
    requestRef = `${COMPONENT}${name}`;
  }
  const validationCodes = r.request ? validationCodesOf(r, schemas[`${id}_request`], (ref) => resolveComponent(schemas, ref)) : [];
  if (r.kind === 'async' || r.kind === 'status') {
    const of = r.kind === 'async' ? [r] : (r.tasks_of ?? []).map((t) => d.routes.find((x) => x.id === t)).filter((x): x is RouteSpec => Boolean(x));
    schemas[`${id}_task`] = taskResponseSchema(of);
    if (r.kind === 'async') setOp(paths, clientPath, 'post', createOperation(d, r, `${id}_create`, requestRef, validationCodes));
    setOp(paths, `${clientPath}/{task_id}`, 'get', readOperation(d, r, `${id}_get`, `${COMPONENT}${id}_task`));
    setOp(paths, `${clientPath}/{task_id}/cancel`, 'post', cancelOperation(d, r, `${id}_cancel`, `${COMPONENT}${id}_task`));
    return;
  }
  [clientPath, ...(r.aliases ?? [])].forEach((p, i) => setOp(paths, p, r.method.toLowerCase(), proxyOperation(d, r, `${id}${i === 0 ? '' : `_alias${i}`}`, requestRef, validationCodes)));
}

function setOp(paths: JsonObject, path: string, method: string, op: JsonObject): void {
  const item = (paths[path] ??= {}) as JsonObject;
  item[method] = op;
}

function resolveComponent(schemas: JsonObject, ref: string): unknown {
  if (!ref.startsWith(COMPONENT)) return undefined;
  let cur: unknown = schemas;
  for (const seg of ref.slice(COMPONENT.length).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))) {
    cur = isObject(cur) ? cur[seg] : undefined;
  }
  return cur;
}

let version: string | undefined;
function packageVersion(): string {
  try {
    version ??= (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    version = '0.0.0';
  }
  return version;
}

// The request schemas of the OpenAPI document, made self-contained: a route's schema is copied
// into components with every `$ref` turned into a reference inside the document, and each shared
// schema it reaches (schemas/, through the registry) is bundled once under its own name.
import { DATA_KEYWORDS, isObject, SCHEMA_MAPS, type JsonObject, type SchemaRegistry } from '../validation/json-schema.ts';
import { COMPONENT } from './problems.ts';

export class SchemaBundle {
  private readonly registry: SchemaRegistry;
  /** The document's components.schemas, where bundled schemas are added. */
  private readonly schemas: JsonObject;
  /** Registry URI → component name. */
  private readonly bundled = new Map<string, string>();

  constructor(registry: SchemaRegistry, schemas: JsonObject) {
    this.registry = registry;
    this.schemas = schemas;
  }

  /** Copy a schema whose own URI is `base` (component `self`), turning every `$ref` into a reference inside this document. */
  rewrite(schema: unknown, base: string, self: string): unknown {
    const walk = (node: unknown): unknown => {
      if (Array.isArray(node)) return node.map(walk);
      if (!isObject(node)) return node;
      const out: JsonObject = {};
      for (const [k, v] of Object.entries(node)) {
        if (k === '$id' || k === '$schema') continue;
        if (k === '$ref' && typeof v === 'string') out[k] = this.refTo(v, base, self);
        else if (DATA_KEYWORDS.has(k)) out[k] = v;
        else if (SCHEMA_MAPS.has(k) && isObject(v)) out[k] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, walk(sub)]));
        else out[k] = walk(v);
      }
      return out;
    };
    return walk(schema);
  }

  private bundle(uri: string): string {
    const known = this.bundled.get(uri);
    if (known) return known;
    const file = uri.slice(uri.lastIndexOf('/') + 1).replace(/\.schema\.json$|\.json$/, '');
    let name = `shared_${file.replace(/[^A-Za-z0-9_.-]/g, '_')}`;
    while (name in this.schemas) name += '_';
    this.bundled.set(uri, name);
    this.schemas[name] = this.rewrite(this.registry.get(uri), uri, name);
    return name;
  }

  private refTo(ref: string, base: string, self: string): string {
    let url: URL;
    try {
      url = new URL(ref, base);
    } catch {
      return ref;
    }
    const fragment = url.hash;
    url.hash = '';
    const target = url.href === base.split('#')[0] ? self : this.registry.has(url.href) ? this.bundle(url.href) : undefined;
    if (!target) return ref;
    return `${COMPONENT}${target}${fragment.replace(/^#/, '')}`;
  }
}

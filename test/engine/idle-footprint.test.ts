// What a fresh `gateway serve` holds before any request: none of what only the operator commands,
// the OpenAPI document, a webhook delivery or a large media body need (each is imported by its
// first use), and not Node's own undici (pulled in by an ESM import of node:http; see
// engine/util/node-http.ts). Every module is held for the life of the process, so one imported
// at start for nothing is memory the idle gateway keeps (docs/performance.md, Memory).
import { expect } from 'chai';
import { recordedServe } from '../helpers/recorded-serve.ts';

describe('an idle gateway holds only what serving needs', function () {
  this.timeout(30_000);

  it('`gateway serve` on the shipped config loads no tooling, OpenAPI builder, Piscina, semantic-conventions table or Node undici', async () => {
    const gw = await recordedServe('engine/cli/main.ts');
    try {
      const { modules, builtins } = await gw.loaded();
      const engine = modules.filter((u) => u.includes('/engine/')).map((u) => u.slice(u.indexOf('/engine/') + 1));
      expect(engine, 'the gateway itself was recorded').to.include('engine/gateway.ts');
      expect(engine.filter((f) => f.startsWith('engine/tooling/') || f.startsWith('engine/docs/'))).to.deep.equal([]);
      expect(engine.filter((f) => f.startsWith('engine/cli/')).sort()).to.deep.equal(['engine/cli/flushed.ts', 'engine/cli/help.ts', 'engine/cli/main.ts', 'engine/cli/serve.ts', 'engine/cli/usage.ts']);
      expect(modules.filter((u) => /node_modules\/(piscina|@opentelemetry\/semantic-conventions)\//.test(u))).to.deep.equal([]);
      expect(builtins.filter((b) => b.includes('undici'))).to.deep.equal([]);
    } finally {
      await gw.stop();
    }
  });
});

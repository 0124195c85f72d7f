// engine/tracing/attributes.ts writes the semantic-convention names the spans use instead of
// loading @opentelemetry/semantic-conventions at run time: each must be the package's own.
import * as conventions from '@opentelemetry/semantic-conventions';
import { expect } from 'chai';
import * as ours from '../../engine/tracing/attributes.ts';

describe('span attribute names', () => {
  it('are the OpenTelemetry semantic conventions\' (stable) names', () => {
    const names = Object.keys(ours);
    expect(names.length).to.be.greaterThan(10);
    for (const name of names) expect((ours as Record<string, string>)[name], name).to.equal((conventions as Record<string, unknown>)[name]);
  });
});

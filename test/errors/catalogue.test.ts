// The error catalogue (engine/errors/catalogue.ts) is the one source of service codes; the docs
// and the OpenAPI document are held to it here, both ways (the pattern of fastify's
// test/internals/errors.test.js): docs/errors.md lists every entry and nothing else;
// docs/operating.md's table of added codes lists exactly the entries marked `added`;
// docs/decisions.md states every HTTP-only pair; every error list of the OpenAPI document names
// catalogue codes with their catalogue titles. GatewayError takes entries by name.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApi } from '../../engine/docs/openapi.ts';
import { CATALOGUE, errorNamed, type CatalogueEntry, type ErrorName } from '../../engine/errors/catalogue.ts';
import { GatewayError } from '../../engine/errors/gateway-error.ts';
import { folderSet } from '../../engine/tooling/sources.ts';
import { ROOT } from '../helpers/gateway.ts';

const entries = Object.entries(CATALOGUE) as [ErrorName, CatalogueEntry][];
const doc = (name: string) => readFileSync(join(ROOT, 'docs', name), 'utf8');

/** The rows of the first markdown table after `heading` (a line that contains it). */
function tableAfter(text: string, heading: string): string[][] {
  const lines = text.split('\n');
  let i = lines.findIndex((l) => l.includes(heading));
  expect(i, `"${heading}" is in the document`).to.be.greaterThan(-1);
  while (i < lines.length && !lines[i]!.startsWith('|')) i++;
  const rows: string[][] = [];
  for (i += 2; i < lines.length && lines[i]!.startsWith('|'); i++) rows.push(lines[i]!.split('|').slice(1, -1).map((c) => c.trim()));
  return rows;
}

describe('error catalogue', () => {
  it('gives each code one entry (HTTP-only pairs reuse a code of the spec)', () => {
    const codes = entries.filter(([, e]) => !e.httpOnly).map(([, e]) => e.code);
    expect(new Set(codes).size, 'one entry per code').to.equal(codes.length);
    for (const [name, e] of entries.filter(([, x]) => x.httpOnly)) expect(codes, name).to.include(e.code);
  });

  it('GatewayError takes an entry by name: its code, status and title', () => {
    for (const [name, e] of entries) {
      const err = new GatewayError(name, 'detail');
      expect([err.code, err.status, err.title, err.errorName]).to.deep.equal([e.code, e.status, e.title, name]);
    }
  });

  it('names a code that arrives as data; an unknown code falls to its category base, as the spec says', () => {
    for (const [name, e] of entries.filter(([, x]) => !x.httpOnly)) expect(errorNamed(e.code)).to.equal(name);
    expect(errorNamed(3999)).to.equal('upstreamServiceError');
    expect(errorNamed(9999)).to.equal('systemError');
  });

  it('docs/errors.md lists every entry, and nothing else', () => {
    const rows = tableAfter(doc('errors.md'), '| name | code |');
    const listed = rows.map(([name, code, status, title]) => `${name} ${code} ${status} ${title}`);
    const catalogue = entries.map(([name, e]) => `\`${name}\` ${e.code} ${e.status} ${e.title}`);
    expect(listed).to.deep.equal(catalogue);
  });

  it("docs/operating.md's table of added codes is the catalogue's added entries", () => {
    const rows = tableAfter(doc('operating.md'), "Service codes the gateway adds to the spec's table");
    expect(rows.map(([code, title]) => `${code} ${title}`)).to.deep.equal(entries.filter(([, e]) => e.added).map(([, e]) => `${e.code} ${e.title}`));
  });

  it('docs/decisions.md states every HTTP-only pair (status / code)', () => {
    const decisions = doc('decisions.md');
    for (const [name, e] of entries.filter(([, x]) => x.httpOnly)) expect(decisions, name).to.contain(`${e.status} / ${e.code}`);
  });

  it('the OpenAPI document lists catalogue codes only, each with its catalogue title', () => {
    const vendors = [...folderSet(join(ROOT, 'vendors')).vendors.values()].map((v) => v.descriptor);
    const titles = new Map(entries.map(([, e]) => [e.code, e.title]));
    const known = new Set(entries.map(([, e]) => `${e.code} ${e.title}`));
    let lists = 0;
    const visit = (node: unknown): void => {
      if (!node || typeof node !== 'object') return;
      const o = node as Record<string, unknown>;
      if (Array.isArray(o['x-error-codes'])) {
        lists++;
        for (const code of o['x-error-codes'] as number[]) expect(titles.has(code), `code ${code}`).to.equal(true);
        const named = String(o.description).split('Codes: ')[1]!.split(', ');
        for (const n of named) expect(known.has(n), `"${n}" in "${o.description}"`).to.equal(true);
      }
      for (const v of Object.values(o)) visit(v);
    };
    visit(buildOpenApi(vendors));
    expect(lists).to.be.greaterThan(20);
  });
});

// The "field lines" record codec: a record is stored as one Redis string, one line per top-level
// field, `name<TAB>JSON value`. JSON.stringify never emits a raw newline or tab, so the lines
// split cleanly, and Lua scripts (LUA_LIB in script.ts) can compare, replace and delete
// top-level fields without decoding the nested JSON. Compact (no per-field hash overhead) and
// patchable in one atomic script: what TaskStore.transition, updateEndpoint and the delivery
// state changes need.

/** Encode a record; `undefined` fields are left out. */
export function encodeRecord(rec: object): string {
  const out: string[] = [];
  for (const [k, v] of Object.entries(rec)) {
    const json = v === undefined ? undefined : JSON.stringify(v);
    if (json === undefined) continue;
    out.push(`${checkName(k)}\t${json}`);
  }
  return out.join('\n');
}

/** Encode a patch: like a record, but an `undefined` field becomes a deletion (empty value). */
export function encodePatch(patch: object): string {
  const out: string[] = [];
  for (const [k, v] of Object.entries(patch)) {
    const json = v === undefined ? undefined : JSON.stringify(v);
    out.push(`${checkName(k)}\t${json ?? ''}`);
  }
  return out.join('\n');
}

export function decodeRecord<T>(s: string): T {
  const rec: Record<string, unknown> = {};
  for (const line of s.split('\n')) {
    if (line === '') continue;
    const tab = line.indexOf('\t');
    rec[line.slice(0, tab)] = JSON.parse(line.slice(tab + 1));
  }
  return rec as T;
}

/** A JSON value as the codec stores it (for Lua comparisons, e.g. a status). */
export const jsonValue = (v: unknown): string => JSON.stringify(v);

function checkName(k: string): string {
  if (k === '' || /[\t\n]/.test(k)) throw new Error(`record field name ${JSON.stringify(k)} cannot be stored`);
  return k;
}

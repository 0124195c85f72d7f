// `gateway new-vendor` enables what it scaffolds: the vendor's name is added to the config's
// `vendors.enabled`, the one list that says what is served, so the walk-through's next request
// reaches it. The list is edited in place in the text (a YAML round trip would re-align every
// comment of the operator's file); a config without the list is left alone and the user told.
import { readFileSync, writeFileSync } from 'node:fs';
import { isScalar, isSeq, parseDocument } from 'yaml';

export type EnableOutcome = 'enabled' | 'listed' | 'no-list';

/** Adds `name` to the `vendors.enabled` list of the config file. */
export function enableVendor(configFile: string, name: string): EnableOutcome {
  const text = readFileSync(configFile, 'utf8');
  const list = parseDocument(text).getIn(['vendors', 'enabled'], true);
  if (!isSeq(list) || !list.range) return 'no-list';
  if (list.items.some((item) => isScalar(item) && item.value === name)) return 'listed';
  let at: number;
  let insert: string;
  if (list.flow) {
    at = text.lastIndexOf(']', list.range[1]);
    insert = list.items.length ? `, ${name}` : name;
  } else {
    const last = list.items.at(-1) as { range?: [number, number, number] } | undefined;
    if (!last?.range) return 'no-list';
    at = last.range[1];
    const lineStart = text.lastIndexOf('\n', last.range[0]) + 1;
    insert = `\n${text.slice(lineStart, last.range[0])}${name}`; // the last item's indent and dash
  }
  writeFileSync(configFile, text.slice(0, at) + insert + text.slice(at));
  return 'enabled';
}

// Reads a server-sent event stream as it passes, without holding or copying it: counts the
// `data:` events and parses only the event that carries usage (found by a byte search for
// `"<usage key>":` followed by anything but null). The bytes themselves are relayed untouched.
const NL = 0x0a;
const DATA = Buffer.from('data:');
const DONE = Buffer.from('[DONE]');

export class SseTap {
  /** `data:` events seen (excluding `[DONE]`). */
  events = 0;
  /** The last event whose usage key held an object, parsed. */
  usageEvent: Record<string, unknown> | undefined;
  private readonly needle: Buffer;
  private readonly usageKey: string;
  private partial: Buffer | undefined;

  constructor(usageKey: string) {
    this.usageKey = usageKey;
    this.needle = Buffer.from(`"${usageKey}":`);
  }

  feed(chunk: Buffer): void {
    let buf = chunk;
    if (this.partial) {
      buf = Buffer.concat([this.partial, chunk]);
      this.partial = undefined;
    }
    let start = 0;
    for (;;) {
      const nl = buf.indexOf(NL, start);
      if (nl === -1) {
        if (start < buf.length) this.partial = buf.subarray(start);
        return;
      }
      if (nl - start > 5) this.line(buf.subarray(start, nl));
      start = nl + 1;
    }
  }

  private line(line: Buffer): void {
    if (line[0] !== 0x64 || line.compare(DATA, 0, 5, 0, 5) !== 0) return;
    let from = 5;
    while (line[from] === 0x20) from++;
    if (line.indexOf(DONE, from) === from) return;
    this.events++;
    const at = line.indexOf(this.needle, from);
    if (at === -1) return;
    let v = at + this.needle.length;
    while (line[v] === 0x20) v++;
    if (line[v] === 0x6e /* n of null */) return;
    try {
      const event = JSON.parse(line.toString('utf8', from, line[line.length - 1] === 0x0d ? line.length - 1 : line.length)) as Record<string, unknown>;
      const usage = event?.[this.usageKey];
      if (usage !== null && typeof usage === 'object') this.usageEvent = event;
    } catch {
      // not JSON: relayed as it is; usage is then estimated
    }
  }
}

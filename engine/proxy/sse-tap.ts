// Reads a server-sent event stream as it passes, without holding or copying it: counts the
// `data:` events and parses only the event that carries usage, found by a byte search for
// `"<usage key>":` followed by anything but null. The bytes themselves are relayed untouched.
// The search runs backwards from the end of each line: upstreams put usage last, so a chunk's
// `"usage":null` is found within a few bytes. (A `"usage":` inside a string value is escaped as
// `\"usage\":` in JSON, so it never matches.)
const NL = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;

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
      if (nl - start > 5) this.line(buf, start, buf[nl - 1] === CR ? nl - 1 : nl);
      start = nl + 1;
    }
  }

  /** The line buf[start, end), without its line break. */
  private line(buf: Buffer, start: number, end: number): void {
    // "data:"
    if (buf[start] !== 0x64 || buf[start + 1] !== 0x61 || buf[start + 2] !== 0x74 || buf[start + 3] !== 0x61 || buf[start + 4] !== 0x3a) return;
    let from = start + 5;
    while (buf[from] === SPACE) from++;
    // "[DONE]"
    if (end - from === 6 && buf[from] === 0x5b && buf[from + 1] === 0x44 && buf[from + 5] === 0x5d) return;
    this.events++;
    if (end - from < this.needle.length) return;
    const at = buf.lastIndexOf(this.needle, end - this.needle.length);
    if (at < from) return;
    let v = at + this.needle.length;
    while (buf[v] === SPACE) v++;
    if (buf[v] === 0x6e /* n of null */) return;
    try {
      const event = JSON.parse(buf.toString('utf8', from, end)) as Record<string, unknown>;
      const usage = event?.[this.usageKey];
      if (usage !== null && typeof usage === 'object') this.usageEvent = event;
    } catch {
      // not JSON: relayed as it is; usage is then estimated
    }
  }
}

// A config.yaml value the schema lets through but the engine cannot use: a CIDR that is not one,
// a CA file that does not exist, an amount outside the money range. The resolver of each config
// section (webhooks, billing, limits) throws it with the JSON pointer of every such value, so
// the loader (engine/load-config.ts) reports each as `file:line:col  /pointer  message`
// like a schema error, and `gateway check` refuses exactly what `serve` refuses.

export interface ConfigProblem {
  /** JSON pointer of the value from the config's root, e.g. /webhooks/allow_private_cidrs/0. */
  readonly pointer: string;
  readonly message: string;
}

export class ConfigValueError extends Error {
  readonly problems: readonly ConfigProblem[];
  constructor(problems: readonly ConfigProblem[]) {
    super(`invalid config:\n  ${problems.map((p) => `${dotted(p.pointer)}: ${p.message}`).join('\n  ')}`);
    this.name = 'ConfigValueError';
    this.problems = problems;
  }
}

/** The JSON pointer (RFC 6901) of a config value from its path, e.g. ('limits', 'models', 'a/b'). */
export function configPointer(...segments: readonly (string | number)[]): string {
  return segments.map((s) => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** /limits/rate/key/per_second → limits.rate.key.per_second (how messages without a position name it). */
function dotted(pointer: string): string {
  return pointer.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')).join('.');
}

// Media checks: named engine plug-ins a descriptor selects with `request.media` entries. Each
// check looks at one string of the request and returns a verdict naming a policy violation
// (engine/validation/error-policy.ts), never a service code. The functions are pure and run
// the same on the main thread (small inputs) and in the media worker pool (large Base64).
//
//   image  an image given as an http(s) URL, a data URI `data:image/<type>;base64,<data>`, or a
//          bare Base64 string. URLs pass (the upstream fetches them). Base64 is checked strictly:
//          alphabet and padding (→ file_content), decoded size (→ file_size), content type by
//          its magic bytes and the data URI's declared type (→ file_format); bytes that are no
//          known image at all → file_content.
//   url    an http(s) URL whose extension, when it has a recognisable one, must be in the
//          allow-list (→ file_format). URLs without one (signed links, ids) pass.
//   dimensions  the size of the media to generate, `<width>*<height>`: malformed (the schema's
//          pattern usually answers first), or a pixel count or an aspect ratio out of bounds
//          (→ out_of_range).

/** The violations of engine/validation/error-policy.ts a media check can name (media sits below it). */
export type MediaViolation = 'malformed' | 'out_of_range' | 'file_size' | 'file_format' | 'file_content';

export type MediaKind = 'image' | 'url' | 'dimensions';
export type ImageFormat = 'jpeg' | 'png' | 'bmp' | 'webp' | 'gif' | 'tiff' | 'heic' | 'avif';

/** One `request.media` entry of a descriptor. */
export interface MediaRule {
  /** JSON pointer into the request; `*` matches every item of an array. */
  at: string;
  kind: MediaKind;
  /** image: largest decoded size in bytes. */
  max_bytes?: number;
  /** image: formats accepted (magic bytes and declared data URI type). */
  formats?: ImageFormat[];
  /** image: how Base64 input is forwarded upstream: as sent, always as a data URI, or always bare. */
  to?: 'as_sent' | 'data_uri' | 'bare_base64';
  /** url: allowed extensions, lower case, without the dot. */
  extensions?: string[];
  /** dimensions: the separator of `<width><separator><height>` (default `*`). */
  separator?: string;
  /** dimensions: bounds of width × height, in pixels, inclusive. */
  min_pixels?: number;
  max_pixels?: number;
  /** dimensions: bounds of width / height, inclusive (1:4 is 0.25). */
  min_ratio?: number;
  max_ratio?: number;
}

export type MediaShape = 'url' | 'data_uri' | 'base64';

export interface MediaVerdict {
  ok: boolean;
  violation?: MediaViolation;
  /** Says what is wrong, without the field name: "is not valid Base64". */
  detail?: string;
  shape?: MediaShape;
  format?: ImageFormat;
  /** Decoded size of Base64 input. */
  bytes?: number;
  /**
   * When the value is forwarded differently from how it was sent: the forwarded value is
   * `prefix + value.slice(payloadStart)` (e.g. a bare Base64 wrapped into a data URI).
   */
  rewrite?: { prefix: string; payloadStart: number };
}

const HTTP_URL = /^https?:\/\//i;
const OTHER_SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:/;
const DATA_URI_HEAD = /^data:([^;,]*)((?:;[^;,]*)*),/i;

const DECLARED_TYPES: Readonly<Record<string, ImageFormat>> = {
  'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/pjpeg': 'jpeg', 'image/png': 'png', 'image/bmp': 'bmp',
  'image/x-ms-bmp': 'bmp', 'image/x-bmp': 'bmp', 'image/webp': 'webp', 'image/gif': 'gif', 'image/tiff': 'tiff',
  'image/heic': 'heic', 'image/heif': 'heic', 'image/avif': 'avif',
};

const MIME_OF: Readonly<Record<ImageFormat, string>> = {
  jpeg: 'image/jpeg', png: 'image/png', bmp: 'image/bmp', webp: 'image/webp', gif: 'image/gif', tiff: 'image/tiff', heic: 'image/heic', avif: 'image/avif',
};

/** Extensions the gateway recognises as a media or document type; anything else counts as none. */
const KNOWN_EXTENSIONS = new Set([
  'mp4', 'mov', 'm4v', 'avi', 'mkv', 'webm', 'flv', 'wmv', 'mpg', 'mpeg', '3gp', 'ts', 'm2ts', 'ogv',
  'wav', 'mp3', 'aac', 'flac', 'ogg', 'oga', 'm4a', 'opus', 'wma', 'amr', 'aiff', 'aif',
  'jpg', 'jpeg', 'png', 'gif', 'bmp', 'webp', 'tif', 'tiff', 'heic', 'heif', 'avif', 'svg', 'ico',
  'pdf', 'txt', 'md', 'doc', 'docx', 'xls', 'xlsx', 'ppt', 'pptx', 'key', 'pages', 'numbers', 'csv', 'json',
  'html', 'htm', 'xml', 'zip', 'rar', '7z', 'gz', 'tar', 'exe', 'bin',
]);

export function checkMedia(value: unknown, rule: MediaRule): MediaVerdict {
  if (typeof value !== 'string') return { ok: true }; // the schema answers for types
  if (rule.kind === 'image') return checkImage(value, rule);
  if (rule.kind === 'url') return checkUrl(value, rule);
  return checkDimensions(value, rule);
}

export function checkDimensions(value: string, rule: MediaRule): MediaVerdict {
  const sep = rule.separator ?? '*';
  const at = value.indexOf(sep);
  const w = Number(value.slice(0, at));
  const h = Number(value.slice(at + sep.length));
  if (at <= 0 || !Number.isInteger(w) || !Number.isInteger(h) || w <= 0 || h <= 0 || !/^[0-9]+$/.test(value.slice(0, at)) || !/^[0-9]+$/.test(value.slice(at + sep.length))) {
    return bad('malformed', `must be <width>${sep}<height> in pixels`);
  }
  const problems: string[] = [];
  const px = w * h;
  const fmt = (n: number) => {
    const side = Math.sqrt(n);
    return Number.isInteger(side) ? `${side}${sep}${side} (${n})` : String(n);
  };
  if ((rule.min_pixels !== undefined && px < rule.min_pixels) || (rule.max_pixels !== undefined && px > rule.max_pixels)) {
    problems.push(`has ${px} pixels; allowed ${rule.min_pixels !== undefined ? fmt(rule.min_pixels) : '1'} to ${rule.max_pixels !== undefined ? fmt(rule.max_pixels) : 'any'}`);
  }
  const ratio = w / h;
  if ((rule.min_ratio !== undefined && ratio < rule.min_ratio) || (rule.max_ratio !== undefined && ratio > rule.max_ratio)) {
    const r = (x: number) => (x >= 1 ? `${+x.toFixed(4)}:1` : `1:${+(1 / x).toFixed(4)}`);
    problems.push(`has the aspect ratio ${w}:${h}; allowed ${rule.min_ratio !== undefined ? r(rule.min_ratio) : 'any'} to ${rule.max_ratio !== undefined ? r(rule.max_ratio) : 'any'}`);
  }
  return problems.length ? bad('out_of_range', problems.join(', and ')) : { ok: true };
}

export function checkImage(value: string, rule: MediaRule): MediaVerdict {
  const allowed = rule.formats ?? ['jpeg', 'png', 'bmp', 'webp'];
  if (value.length === 0) return bad('malformed', 'must be an image URL, a data URI or Base64, not an empty string');
  if (HTTP_URL.test(value)) {
    return isHttpUrl(value) ? { ok: true, shape: 'url' } : bad('malformed', 'is not a valid http(s) URL');
  }
  if (value.length >= 5 && value.slice(0, 5).toLowerCase() === 'data:') {
    const head = DATA_URI_HEAD.exec(value.slice(0, 256));
    if (!head) return bad('malformed', 'is not a data URI of the form data:image/<type>;base64,<data>');
    const type = head[1]!.trim().toLowerCase();
    const params = head[2]!.toLowerCase().split(';').map((s) => s.trim());
    if (!type.startsWith('image/')) return bad('file_format', `is a data URI of type ${type || '(none)'}; only images are accepted (${allowed.join(', ')})`);
    const declared = DECLARED_TYPES[type];
    if (!declared || !allowed.includes(declared)) return bad('file_format', `has the unsupported image type ${type}; accepted: ${allowed.join(', ')}`);
    if (!params.includes('base64')) return bad('malformed', 'is a data URI without ;base64; only Base64 data URIs are accepted');
    const start = head[0].length;
    const v = checkBase64Image(value, start, rule, allowed);
    if (!v.ok) return v;
    const rewrite = rule.to === 'bare_base64' ? { prefix: '', payloadStart: start } : undefined;
    return { ...v, shape: 'data_uri', ...(rewrite ? { rewrite } : {}) };
  }
  if (OTHER_SCHEME.test(value)) return bad('malformed', 'must be an http(s) URL, a data URI or Base64');
  const v = checkBase64Image(value, 0, rule, allowed);
  if (!v.ok) return v;
  const rewrite = rule.to === 'data_uri' ? { prefix: `data:${MIME_OF[v.format!]};base64,`, payloadStart: 0 } : undefined;
  return { ...v, shape: 'base64', ...(rewrite ? { rewrite } : {}) };
}

function checkBase64Image(value: string, start: number, rule: MediaRule, allowed: readonly ImageFormat[]): MediaVerdict {
  const size = base64DecodedSize(value, start);
  if (size === undefined) return bad('file_content', 'is not valid Base64 (it does not decode)');
  if (size === 0) return bad('file_content', 'is empty once decoded');
  if (rule.max_bytes !== undefined && size > rule.max_bytes) {
    return { ...bad('file_size', `is ${formatBytes(size)} once decoded; the limit is ${formatBytes(rule.max_bytes)}`), bytes: size };
  }
  const head = Buffer.from(value.slice(start, start + 32), 'base64');
  const format = sniffImage(head);
  if (!format) return { ...bad('file_content', 'does not contain a recognisable image'), bytes: size };
  if (!allowed.includes(format)) return { ...bad('file_format', `is a ${format.toUpperCase()} image; accepted: ${allowed.join(', ')}`), bytes: size, format };
  return { ok: true, format, bytes: size };
}

export function checkUrl(value: string, rule: MediaRule): MediaVerdict {
  if (!HTTP_URL.test(value) || !isHttpUrl(value)) return bad('malformed', 'must be an http(s) URL');
  const allowed = rule.extensions ?? [];
  const ext = urlExtension(value);
  if (ext === undefined || !KNOWN_EXTENSIONS.has(ext) || allowed.includes(ext)) return { ok: true, shape: 'url' };
  return bad('file_format', `has the extension .${ext}; accepted: ${allowed.map((e) => `.${e}`).join(', ')}`);
}

/** Lower-case extension of the URL's last path segment, if it has one. */
export function urlExtension(value: string): string | undefined {
  let path: string;
  try {
    path = new URL(value).pathname;
  } catch {
    return undefined;
  }
  const last = path.slice(path.lastIndexOf('/') + 1);
  const m = /\.([A-Za-z0-9]{1,8})$/.exec(last);
  return m ? m[1]!.toLowerCase() : undefined;
}

function isHttpUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const u = new URL(value);
  return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.length > 0;
}

/**
 * Decoded size of the standard-alphabet Base64 in value[start..], or undefined when it does not
 * decode: a character outside A–Z a–z 0–9 + /, padding anywhere but the end, more than two `=`,
 * or a length that no Base64 has (4n+1; padded input must be a multiple of 4).
 */
export function base64DecodedSize(value: string, start = 0): number | undefined {
  let end = value.length;
  let pad = 0;
  while (end > start && value.charCodeAt(end - 1) === 61 /* = */ && pad < 3) {
    end--;
    pad++;
  }
  if (pad > 2) return undefined;
  for (let i = start; i < end; i++) {
    const c = value.charCodeAt(i);
    const ok = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47;
    if (!ok) return undefined;
  }
  const n = end - start;
  if (pad > 0 && (n + pad) % 4 !== 0) return undefined;
  if (n % 4 === 1) return undefined;
  return Math.floor((n * 3) / 4);
}

/** The image format of the first bytes, if they are one. */
export function sniffImage(b: Uint8Array): ImageFormat | undefined {
  const at = (i: number, ...bytes: number[]) => bytes.every((x, j) => b[i + j] === x);
  const ascii = (i: number, s: string) => at(i, ...[...s].map((ch) => ch.charCodeAt(0)));
  if (at(0, 0xff, 0xd8, 0xff)) return 'jpeg';
  if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'png';
  if (ascii(0, 'RIFF') && ascii(8, 'WEBP')) return 'webp';
  if (ascii(0, 'GIF87a') || ascii(0, 'GIF89a')) return 'gif';
  if (at(0, 0x49, 0x49, 0x2a, 0x00) || at(0, 0x4d, 0x4d, 0x00, 0x2a)) return 'tiff';
  if (ascii(4, 'ftyp')) {
    const brand = String.fromCharCode(...b.slice(8, 12));
    if (brand === 'avif' || brand === 'avis') return 'avif';
    if (['heic', 'heix', 'hevc', 'heim', 'heis', 'mif1', 'msf1'].includes(brand)) return 'heic';
  }
  if (ascii(0, 'BM') && b.length >= 14) return 'bmp';
  return undefined;
}

function bad(violation: MediaViolation, detail: string): MediaVerdict {
  return { ok: false, violation, detail };
}

function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(n % (1024 * 1024) === 0 ? 0 : 2)} MB`;
  if (n >= 1024) return `${(n / 1024).toFixed(n % 1024 === 0 ? 0 : 1)} KB`;
  return `${n} bytes`;
}

/** The forwarded value of a string the verdict rewrites (small strings; big ones become blobs). */
export function applyRewrite(value: string, v: MediaVerdict): string {
  return v.rewrite ? v.rewrite.prefix + value.slice(v.rewrite.payloadStart) : value;
}

// The console's pages (docs/console-api.md, "Pages"): a static single-page app in console/ at the
// repository root, plain ES modules run by the browser as they are (no build step), and the one
// library it uses, htm's standalone Preact build, served from node_modules (no CDN: works offline).
//
//   GET /console, /console/<client route>       the app shell (console/index.html), no-cache
//   GET /console/assets/lib.js                  re-exports the library from its versioned path, no-cache
//   GET /console/assets/vendor/htm-<v>.js       the library itself, immutable (its URL changes with it)
//   GET /console/assets/<file>                  console/<file> (.js .css .svg .png .ico), no-cache
//
// The app imports the library as ./lib.js, a stable name, so an upgrade of htm needs no edit of
// the pages while the library's own URL changes with its version and can be cached for good.
// Every answer, problems included, carries the contract's CSP and security headers.
//
// Mount it after the console API's router (/console/v1/...): its patterns would match those
// paths too; it passes them on, but the route table labels a path with the first pattern
// registered for it.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { notFound } from './route-table.ts';

export const CONSOLE_CSP = consoleCsp([]);

/**
 * `imgOrigins`: where else result thumbnails may load from over plain HTTP (the sandbox's own
 * server, whose result URLs are http://127.0.0.1:<port>); providers' result URLs are https.
 */
function consoleCsp(imgOrigins: readonly string[]): string {
  return `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:${imgOrigins.map((o) => ` ${o}`).join('')}; connect-src 'self'; ` +
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
}

/** The folder of the app's files; tests may point elsewhere. */
export const CONSOLE_DIR = fileURLToPath(new URL('../../console/', import.meta.url));

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

// The router table of the front door (route-table.ts) takes no wildcards, so client-side routes
// are spelled as up to four segments: deeper paths are a 404 of the front door.
const PATHS = ['/console', '/console/:a', '/console/:a/:b', '/console/:a/:b/:c', '/console/:a/:b/:c/:d'];

function securityHeaders(csp: string) {
  return (_req: Request, res: Response, next: NextFunction): void => {
    res.set({
      'content-security-policy': csp,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'same-origin',
      // For browsers that predate frame-ancestors.
      'x-frame-options': 'DENY',
    });
    next();
  };
}

export function consolePagesRouter(opts: { dir?: string; imgOrigins?: readonly string[] } = {}): Router {
  const dir = resolve(opts.dir ?? CONSOLE_DIR);
  // htm's exports map hides package.json; its main entry is dist/htm.js.
  const htmDir = dirname(dirname(createRequire(import.meta.url).resolve('htm')));
  const htmVersion = (JSON.parse(readFileSync(join(htmDir, 'package.json'), 'utf8')) as { version: string }).version;
  const vendorName = `htm-${htmVersion}.js`;
  const vendorFile = join(htmDir, 'preact', 'standalone.module.js');
  const lib = `export * from './vendor/${vendorName}';\n`;

  const router = express.Router();
  router.use('/console', securityHeaders(consoleCsp(opts.imgOrigins ?? [])));
  router.get(PATHS, (req, res, next) => {
    // req.params are already percent-decoded, so a segment may hold '/' or '..': the file is
    // resolved and must stay inside the console folder.
    const segments = ['a', 'b', 'c', 'd'].map((k) => req.params[k as 'a']).filter((s): s is string => s !== undefined);
    // /console/v1/... is the console's API (mounted by its own router), never a page.
    if (segments[0]?.toLowerCase() === 'v1') return next();
    const send = (file: string, type: string, cacheControl: string) => {
      res.type(type).set('cache-control', cacheControl);
      // Ranges of a script are of no use here, and a bad Range header must not become a 416
      // outside the problem format; conditional GETs (ETag, Last-Modified) still answer 304.
      res.sendFile(file, { dotfiles: 'deny', acceptRanges: false }, (err) => {
        if (!err) return;
        if (res.headersSent) res.destroy();
        // sendFile's callback runs outside express's promise chain: hand the problem on.
        else next(notFound(req.method, req.path));
      });
    };
    if (segments[0]?.toLowerCase() !== 'assets') return send(join(dir, 'index.html'), 'html', 'no-cache');
    const rel = segments.slice(1);
    if (rel.length === 1 && rel[0] === 'lib.js') {
      res.type(TYPES['.js']!).set('cache-control', 'no-cache').send(lib);
      return;
    }
    if (rel.length === 2 && rel[0] === 'vendor' && rel[1] === vendorName) {
      return send(vendorFile, TYPES['.js']!, 'public, max-age=31536000, immutable');
    }
    const file = resolve(dir, ...rel);
    const type = TYPES[extname(file)];
    if (rel.length === 0 || !type || !file.startsWith(dir + sep)) throw notFound(req.method, req.path);
    send(file, type, 'no-cache');
  });
  return router;
}

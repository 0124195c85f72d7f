// The API description, served by the gateway itself: GET /openapi.json (OpenAPI 3.1, generated
// once from the compiled vendors' descriptors) and GET /docs, an interactive reference page
// rendered by Swagger UI, whose files are served from the installed package (no CDN, works offline).
// Both are public: they describe the API, they do not use it.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import express, { type Router } from 'express';
import type { VendorPlan } from '../descriptors/compile.ts';

const ASSETS = ['swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'favicon-32x32.png', 'favicon-16x16.png'];

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Model gateway API</title>
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="docs"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;

const INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#docs',
  deepLinking: true,
  persistAuthorization: true,
  tryItOutEnabled: false,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
});
`;

export function openapiRouter(vendors: readonly VendorPlan[]): Router {
  const router = express.Router();
  let body: string | undefined;
  router.get('/openapi.json', async (_req, res) => {
    // The document's builder is imported by the first request for it: a gateway nobody asks for
    // its document does not hold the builder's modules (docs/performance.md, Memory).
    body ??= JSON.stringify((await import('../docs/openapi.ts')).buildOpenApi(vendors.map((v) => v.loaded.descriptor)));
    res.type('application/json').set('cache-control', 'no-cache').send(body);
  });
  const csp = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'";
  router.get(['/docs', '/docs/'], (_req, res) => {
    res.type('html').set('content-security-policy', csp).send(PAGE);
  });
  router.get('/docs/init.js', (_req, res) => {
    res.type('application/javascript').send(INIT);
  });
  const dist = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  router.get('/docs/assets/:file', (req, res, next) => {
    const file = String(req.params.file);
    if (!ASSETS.includes(file)) return next();
    res.sendFile(join(dist, file), { maxAge: '1d' });
  });
  return router;
}

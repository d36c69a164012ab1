import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import Router from '@koa/router';
import type { AppContext, AppState } from '../context.js';
import { buildOpenApiDocument } from '../openapi.js';

const SWAGGER_UI_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The only files /docs serves from swagger-ui-dist: everything the page needs, nothing from a CDN. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'index.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Commerce data synchronisation service: API</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
  <link rel="stylesheet" href="/docs/index.css">
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png" sizes="32x32">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/swagger-ui-standalone-preset.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;

// validatorUrl: null, or Swagger UI would load a badge from validator.swagger.io. defaultModelsExpandDepth: -1
// leaves out the list of every schema at the foot of the page, the slowest part to lay out (each operation still shows its own).
const INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  defaultModelsExpandDepth: -1,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'StandaloneLayout',
});
`;

/**
 * `/`: where a person who opens the service's address goes next, the API's
 * documentation or, for operators, /admin (docs/decisions.md, "The root
 * page links the docs and the admin area").
 */
const ROOT_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>commerce-sync</title>
<style>body { font-family: system-ui, sans-serif; margin: 2rem; color: #1f2937; } li { margin: 0.4rem 0; }</style>
</head>
<body>
<h1>Commerce data synchronisation service</h1>
<ul>
<li><a href="/docs">API documentation</a> (the <a href="/openapi.json">OpenAPI description</a>)</li>
<li><a href="/admin">Admin</a>: for operators, with the admin credentials</li>
</ul>
</body>
</html>
`;

/** /openapi.json, and /docs rendering it with Swagger UI assets served from node_modules; `/` links to both. */
export function docsRouter() {
  const router = new Router<AppState>();
  let document: string | undefined;

  router.get('/openapi.json', (ctx: AppContext) => {
    // Built and serialised on first use, after every router module has registered its paths.
    document ??= JSON.stringify(buildOpenApiDocument());
    ctx.type = 'application/json';
    ctx.body = document;
  });

  router.get('/', (ctx: AppContext) => {
    ctx.set(
      'Content-Security-Policy',
      "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = ROOT_PAGE;
  });

  router.get('/docs', (ctx: AppContext) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });

  router.get('/docs/:asset', (ctx: AppContext) => {
    const asset = ctx.params['asset']!;
    if (asset === 'init.js') {
      ctx.type = 'text/javascript; charset=utf-8';
      ctx.body = INIT;
      return;
    }
    const type = ASSETS[asset];
    if (!type) return; // 404 from the error middleware
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = createReadStream(path.join(SWAGGER_UI_DIR, asset));
  });

  return router;
}

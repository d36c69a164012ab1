import { createHash } from 'node:crypto';

/*
 * What every admin page shares: its look, its content security policy, and
 * the one way its script calls the admin API.
 *
 * An operator may open a page as http://user:password@host/admin/...: the
 * document's URL then carries the credentials, every relative URL resolved
 * against it does too, and Chromium refuses fetch() to such a URL. The pages
 * therefore fetch `new URL(path, location.origin)` (the origin never carries
 * credentials); the browser sends the Basic credentials it keeps for the site.
 */

/** The script prelude: `call` (JSON in, JSON out, an Error with the API's message otherwise) and `say` (ok or error colour). */
const PRELUDE = `
const status = document.querySelector('#status');
const say = (text, failed) => { status.textContent = text; status.className = failed ? 'failed' : 'ok'; };
const adminUrl = (path) => new URL(path, location.origin);

async function call(method, path, body) {
  const response = await fetch(adminUrl(path), {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed = {};
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    throw new Error('HTTP ' + response.status);
  }
  if (!response.ok) throw new Error(typeof parsed.error === 'string' ? parsed.error : (parsed.error && parsed.error.message) || 'HTTP ' + response.status);
  return parsed;
}

function cell(row, text, className) {
  const td = document.createElement('td');
  td.textContent = text === null || text === undefined ? '' : String(text);
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}
`;

export const PAGE_STYLE = `
  body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #1f2937; }
  header { display: flex; align-items: baseline; gap: 1.5rem; flex-wrap: wrap; }
  h1 { font-size: 1.3rem; margin: 0; }
  h2 { font-size: 1.05rem; margin: 1.5rem 0 0.3rem; }
  p.hint { color: #4b5563; max-width: 60rem; }
  table { border-collapse: collapse; width: 100%; font-size: 0.85rem; margin-top: 1rem; }
  th, td { border-bottom: 1px solid #e5e7eb; padding: 0.35rem 0.5rem; text-align: left; vertical-align: top; }
  th { background: #f3f4f6; }
  td.number, th.number { text-align: right; }
  td.mono { font-family: ui-monospace, monospace; font-size: 0.8rem; }
  td.error { color: #b91c1c; max-width: 28rem; }
  button { margin-right: 0.3rem; }
  #status { min-height: 1.2rem; }
  #status.ok { color: #065f46; }
  #status.failed { color: #b91c1c; font-weight: 600; }
`;

/** The links every admin page carries in its header. */
export const ADMIN_NAV = `<nav class="admin-nav"><a href="/admin">Admin home</a> · <a href="/admin/queues">Queue dashboard</a> · <a href="/admin/set-aside">Set-aside changes</a> · <a href="/admin/bulk-jobs">Bulk files</a> · <a href="/admin/api/sync-status">sync-status</a> · <a href="/docs">API docs</a></nav>`;

export interface AdminPage {
  html: string;
  /** Nothing but the page itself and its one inline script; calls only to its own origin. */
  csp: string;
}

/** A page: `body` is its markup (with a `#status` element), `script` runs after the prelude. */
export function adminPage(title: string, body: string, script: string): AdminPage {
  const source = PRELUDE + script;
  const hash = createHash('sha256').update(source).digest('base64');
  return {
    csp: `default-src 'none'; script-src 'sha256-${hash}'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    html: `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${title} · commerce-sync</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
${body}
<script>${source}</script>
</body>
</html>
`,
  };
}

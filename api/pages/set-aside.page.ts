import { createHash } from 'node:crypto';

/*
 * The operator's page for set-aside changes (GET /admin/set-aside): a table
 * of what the applier could not apply, with retry and discard. It is a shell
 * over the admin JSON API (the one definition of what these actions do) and
 * is served behind the same admin guard; the browser sends the Basic
 * credentials it already holds for /admin.
 */

const SCRIPT = `
const list = document.querySelector('#changes tbody');
const status = document.querySelector('#status');
const count = document.querySelector('#count');
const say = (text) => { status.textContent = text; };

async function call(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : {};
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

function button(label, title, action) {
  const element = document.createElement('button');
  element.type = 'button';
  element.textContent = label;
  element.title = title;
  element.addEventListener('click', action);
  return element;
}

async function load() {
  const page = await call('GET', '/admin/api/set-aside?limit=1000');
  list.replaceChildren();
  count.textContent = page.data.length === 0 ? 'Nothing is set aside.' : page.data.length + (page.next_after === null ? '' : '+') + ' set aside';
  document.querySelector('#retry-all').disabled = page.data.length === 0;
  for (const change of page.data) {
    const row = document.createElement('tr');
    row.dataset.seq = change.seq;
    cell(row, change.seq, 'number');
    cell(row, change.account);
    cell(row, change.language_id);
    cell(row, change.kind);
    cell(row, change.record_id);
    cell(row, change.action);
    cell(row, change.request_id, 'mono');
    cell(row, change.error, 'error');
    cell(row, change.attempts, 'number');
    cell(row, change.accepted_at, 'mono');
    cell(row, change.failed_at, 'mono');
    const actions = cell(row, '');
    actions.appendChild(button('Retry', 'Put it back in line for the worker', () => act(() => call('POST', '/admin/api/set-aside/' + change.seq + '/retry', {}), 'Retried change ' + change.seq)));
    actions.appendChild(button('Discard', 'Give it up for good (written to the audit log)', () => {
      if (confirm('Discard change ' + change.seq + ' (' + change.kind + ' ' + change.record_id + ')? Its effects will never be applied.'))
        act(() => call('DELETE', '/admin/api/set-aside/' + change.seq), 'Discarded change ' + change.seq);
    }));
    list.appendChild(row);
  }
}

async function act(action, done) {
  try {
    const result = await action();
    say(typeof result === 'string' ? result : done);
  } catch (error) {
    say('Failed: ' + error.message);
  }
  await load().catch((error) => say('Could not load the list: ' + error.message));
}

document.querySelector('#retry-all').addEventListener('click', () =>
  act(async () => 'Retried ' + (await call('POST', '/admin/api/set-aside/retry', {})).retried.length + ' changes', 'Retried'),
);
document.querySelector('#reload').addEventListener('click', () => act(async () => undefined, 'Reloaded'));
load().catch((error) => say('Could not load the list: ' + error.message));
`;

/** The Content-Security-Policy of the page: nothing but itself and its one inline script. */
export const SET_ASIDE_PAGE_CSP = `default-src 'none'; script-src 'sha256-${createHash('sha256').update(SCRIPT).digest('base64')}'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

export const SET_ASIDE_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Set-aside changes · commerce-sync</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #1f2937; }
  header { display: flex; align-items: baseline; gap: 1.5rem; }
  h1 { font-size: 1.3rem; margin: 0; }
  p.hint { color: #4b5563; max-width: 60rem; }
  table { border-collapse: collapse; width: 100%; font-size: 0.85rem; margin-top: 1rem; }
  th, td { border-bottom: 1px solid #e5e7eb; padding: 0.35rem 0.5rem; text-align: left; vertical-align: top; }
  th { background: #f3f4f6; }
  td.number { text-align: right; }
  td.mono { font-family: ui-monospace, monospace; font-size: 0.8rem; }
  td.error { color: #b91c1c; max-width: 28rem; }
  button { margin-right: 0.3rem; }
  #status { min-height: 1.2rem; color: #065f46; }
</style>
</head>
<body>
<header><h1>Set-aside changes</h1><a href="/admin/queues">Queue dashboard</a><a href="/admin/api/sync-status">sync-status</a></header>
<p class="hint">Changes the worker could not apply after their attempts. Fix the cause, then retry them: the worker applies
them at once, after the changes that came later. Discarding one gives its effects up for good; the audit log records who did it.</p>
<p><button type="button" id="retry-all">Retry all</button><button type="button" id="reload">Reload</button> <span id="count"></span></p>
<p id="status" role="status"></p>
<table id="changes">
<thead><tr><th>Seq</th><th>Account</th><th>Language</th><th>Kind</th><th>Record</th><th>Action</th><th>Request id</th><th>Error</th><th>Attempts</th><th>Accepted</th><th>Set aside</th><th></th></tr></thead>
<tbody></tbody>
</table>
<script>${SCRIPT}</script>
</body>
</html>
`;

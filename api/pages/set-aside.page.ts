import { ADMIN_NAV, adminPage } from './page-kit.js';

/*
 * The operator's page for set-aside changes (GET /admin/set-aside): a table
 * of what the applier could not apply, with retry and discard. It is a shell
 * over the admin JSON API (the one definition of what these actions do) and
 * is served behind the same admin guard; the browser sends the Basic
 * credentials it already holds for /admin.
 */

const SCRIPT = `
const list = document.querySelector('#changes tbody');
const count = document.querySelector('#count');

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
    say('Failed: ' + error.message, true);
  }
  await load().catch((error) => say('Could not load the list: ' + error.message, true));
}

document.querySelector('#retry-all').addEventListener('click', () =>
  act(async () => 'Retried ' + (await call('POST', '/admin/api/set-aside/retry', {})).retried.length + ' changes', 'Retried'),
);
document.querySelector('#reload').addEventListener('click', () => act(async () => undefined, 'Reloaded'));
load().catch((error) => say('Could not load the list: ' + error.message, true));
`;

export const SET_ASIDE_PAGE = adminPage(
  'Set-aside changes',
  `<header><h1>Set-aside changes</h1>${ADMIN_NAV}</header>
<p class="hint">Changes the worker could not apply after their attempts. Fix the cause, then retry them: the worker applies
them at once, after the changes that came later. Discarding one gives its effects up for good; the audit log records who did it.</p>
<p><button type="button" id="retry-all">Retry all</button><button type="button" id="reload">Reload</button> <span id="count"></span></p>
<p id="status" role="status"></p>
<table id="changes">
<thead><tr><th>Seq</th><th>Account</th><th>Language</th><th>Kind</th><th>Record</th><th>Action</th><th>Request id</th><th>Error</th><th>Attempts</th><th>Accepted</th><th>Set aside</th><th></th></tr></thead>
<tbody></tbody>
</table>`,
  SCRIPT,
);

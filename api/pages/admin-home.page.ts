import { ADMIN_NAV, adminPage } from './page-kit.js';

/*
 * The admin landing page (GET /admin): where everything for operators is,
 * sync-status said in words, and the counts per account
 * (/admin/api/accounts). Served behind the admin guard like every /admin page.
 */

const SCRIPT = `
const words = document.querySelector('#sync-words');
const list = document.querySelector('#accounts tbody');

const plural = (count, one, many) => count.toLocaleString('en') + ' ' + (count === 1 ? one : many);

function describe(status) {
  const parts = [];
  if (status.pending === 0) parts.push('Drained: every accepted change is applied.');
  else parts.push(plural(status.pending, 'change is', 'changes are') + ' accepted and not applied yet (each line of a queued or running bulk file counts as one).');
  if (status.failed === 0) parts.push('Nothing failed.');
  else parts.push(plural(status.failed, 'piece of work', 'pieces of work') + ' failed and wait for an operator: set-aside changes and bulk files that ended failed.');
  return parts.join(' ');
}

function link(text, href) {
  const a = document.createElement('a');
  a.textContent = text;
  a.href = href;
  return a;
}

async function load() {
  const [status, accounts] = await Promise.all([call('GET', '/admin/api/sync-status'), call('GET', '/admin/api/accounts')]);
  words.textContent = describe(status);
  words.className = status.failed > 0 ? 'attention' : status.pending > 0 ? 'busy' : 'calm';
  list.replaceChildren();
  for (const account of accounts.data) {
    const row = document.createElement('tr');
    cell(row, '').appendChild(link(account.account, '/admin/bulk-jobs?account=' + encodeURIComponent(account.account)));
    for (const field of ['languages', 'records', 'pending', 'set_aside', 'bulk_files_queued', 'bulk_files_running'])
      cell(row, account[field].toLocaleString('en'), 'number');
    list.appendChild(row);
  }
  document.querySelector('#no-accounts').hidden = accounts.data.length > 0;
  say('Updated ' + new Date().toLocaleTimeString('en-GB'));
}

document.querySelector('#reload').addEventListener('click', () => load().catch((error) => say('Could not load: ' + error.message, true)));
load().catch((error) => say('Could not load: ' + error.message, true));
`;

export const ADMIN_HOME_PAGE = adminPage(
  'Admin',
  `<style>
  #sync-words { font-size: 1.05rem; max-width: 60rem; padding: 0.6rem 0.8rem; border-radius: 0.3rem; background: #f3f4f6; }
  #sync-words.calm { background: #ecfdf5; }
  #sync-words.busy { background: #eff6ff; }
  #sync-words.attention { background: #fef2f2; color: #991b1b; }
  ul.places li { margin: 0.2rem 0; }
</style>
<header><h1>commerce-sync admin</h1>${ADMIN_NAV}</header>
<h2>Sync status</h2>
<p id="sync-words">Loading…</p>
<p><button type="button" id="reload">Reload</button> <span id="status" role="status"></span></p>
<h2>Where to look</h2>
<ul class="places">
<li><a href="/admin/queues">Queue dashboard</a>: every queue's jobs, their errors, retry of failed jobs.</li>
<li><a href="/admin/set-aside">Set-aside changes</a>: changes the worker could not apply; retry or discard them.</li>
<li><a href="/admin/bulk-jobs">Bulk files</a>: every shop's files, their progress and line errors.</li>
<li><a href="/admin/api/sync-status">sync-status</a> (JSON: <code>pending</code>, <code>failed</code>) and the <a href="/docs">API docs</a>, the admin API under "admin".</li>
</ul>
<h2>Accounts</h2>
<table id="accounts">
<thead><tr><th>Account</th><th class="number">Languages</th><th class="number">Records</th><th class="number">Pending</th><th class="number">Set aside</th><th class="number">Bulk files queued</th><th class="number">Bulk files running</th></tr></thead>
<tbody></tbody>
</table>
<p id="no-accounts" class="hint" hidden>No accounts yet: create a client of one with <code>npm run cli -- create-client --account NAME</code>.</p>`,
  SCRIPT,
);

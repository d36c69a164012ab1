import { ADMIN_NAV, adminPage } from './page-kit.js';

/*
 * Bulk files across accounts (GET /admin/bulk-jobs), a shell over
 * /admin/api/bulk-jobs: each file's account, language, state, line counts,
 * progress and times, with a link to its line errors. The filters start from
 * the page's own query (?account=&language_id=&status=), so the landing page
 * can link an account's files.
 */

const SCRIPT = `
const list = document.querySelector('#files tbody');
const more = document.querySelector('#more');
const filter = {
  account: document.querySelector('#account'),
  language_id: document.querySelector('#language'),
  status: document.querySelector('#state'),
};
const given = new URLSearchParams(location.search);
for (const [name, input] of Object.entries(filter)) input.value = given.get(name) || '';
let next = null;

function query(before) {
  const params = new URLSearchParams();
  for (const [name, input] of Object.entries(filter)) if (input.value.trim()) params.set(name, input.value.trim());
  if (before) params.set('before', before);
  return '/admin/api/bulk-jobs?' + params.toString();
}

// Times in UTC to the second: the table stays within a laptop's width.
const time = (value) => (value ? value.slice(0, 19).replace('T', ' ') : '');

function progressCell(row, job) {
  const td = cell(row, '', 'progress');
  const bar = document.createElement('progress');
  bar.max = 100;
  bar.value = job.progress;
  td.appendChild(bar);
  td.appendChild(document.createTextNode(' ' + job.progress + ' %'));
}

function show(job) {
  const row = document.createElement('tr');
  row.dataset.id = job.id;
  cell(row, job.id, 'mono');
  cell(row, job.account);
  cell(row, job.language_id);
  cell(row, job.status, 'state-' + job.status);
  cell(row, job.lines.toLocaleString('en'), 'number');
  cell(row, job.lines_applied.toLocaleString('en'), 'number');
  cell(row, job.failed.toLocaleString('en'), 'number');
  progressCell(row, job);
  cell(row, time(job.created_at), 'mono');
  cell(row, time(job.started_at), 'mono');
  cell(row, time(job.finished_at), 'mono');
  const errors = cell(row, job.error, 'error');
  if (job.failed > 0) {
    const a = document.createElement('a');
    a.href = '/admin/api/bulk-jobs/' + job.id + '/errors';
    a.textContent = 'Line errors';
    if (job.error) errors.appendChild(document.createElement('br'));
    errors.appendChild(a);
  }
  list.appendChild(row);
}

async function load(append) {
  const page = await call('GET', query(append ? next : null));
  if (!append) list.replaceChildren();
  page.data.forEach(show);
  next = page.next_before;
  more.hidden = next === null;
  const shown = list.children.length;
  say(shown === 0 ? 'No bulk files match.' : shown + (next === null ? '' : '+') + (shown === 1 && next === null ? ' file' : ' files'));
}

const reload = () => load(false).catch((error) => say('Could not load the files: ' + error.message, true));
document.querySelector('#apply').addEventListener('click', reload);
more.addEventListener('click', () => load(true).catch((error) => say('Could not load more: ' + error.message, true)));
reload();
`;

export const BULK_JOBS_PAGE = adminPage(
  'Bulk files',
  `<style>
  td.state-failed { color: #b91c1c; font-weight: 600; }
  td.state-running { color: #1d4ed8; }
  td.progress { white-space: nowrap; }
  #files td.mono:first-child { max-width: 9rem; word-break: break-all; }
  label { margin-right: 0.8rem; }
</style>
<header><h1>Bulk files</h1>${ADMIN_NAV}</header>
<p class="hint">Every shop's bulk files, newest first. Lines applied counts the lines whose effects are applied
(a refused line has none to wait for); a file's refused lines and their errors are behind its "Line errors" link.</p>
<p>
<label>Account <input id="account" size="18"></label>
<label>Language <input id="language" size="8"></label>
<label>State <select id="state"><option value="">any</option><option>receiving</option><option>queued</option><option>running</option><option>completed</option><option>failed</option></select></label>
<button type="button" id="apply">Show</button>
</p>
<p id="status" role="status"></p>
<table id="files">
<thead><tr><th>File</th><th>Account</th><th>Language</th><th>State</th><th class="number">Lines</th><th class="number">Applied</th><th class="number">Failed</th><th>Progress</th><th>Created (UTC)</th><th>Started</th><th>Finished</th><th>Errors</th></tr></thead>
<tbody></tbody>
</table>
<p><button type="button" id="more" hidden>More</button></p>`,
  SCRIPT,
);

import { type BulkJob, bulkPath, jobFailed } from './bulk-job.js';
import { formatCount } from './progress.reporter.js';
import { errorText, type ServiceClient } from './service.client.js';
import type { Terminal } from './terminal.js';

type JobSummary = Omit<BulkJob, 'errors'>;

interface Page<T> {
  data: T[];
  meta: { current_page: number; per_page: number; total: number };
}

const COLUMNS: Array<[string, (job: JobSummary) => string]> = [
  ['ID', (job) => job.id],
  ['STATUS', (job) => job.status],
  ['LINES', (job) => formatCount(job.lines)],
  ['STORED', (job) => formatCount(job.lines_stored)],
  ['APPLIED', (job) => formatCount(job.lines_applied)],
  ['FAILED', (job) => formatCount(job.failed)],
  ['CREATED', (job) => job.created_at],
];

/** A page of the language's jobs, newest first: a table, or one JSON object per line with --json. */
export async function listJobs(
  client: ServiceClient,
  options: { language: string; page: number; perPage: number; json: boolean },
  terminal: Terminal,
): Promise<number> {
  const page = await client.getJson<Page<JobSummary>>(bulkPath(options.language, `?page=${options.page}&per_page=${options.perPage}`));
  if (options.json) {
    for (const job of page.data) terminal.stdout.write(`${JSON.stringify(job)}\n`);
    return 0;
  }
  const rows = [COLUMNS.map(([title]) => title), ...page.data.map((job) => COLUMNS.map(([, cell]) => cell(job)))];
  const widths = COLUMNS.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows)
    terminal.stdout.write(
      `${row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd()}\n`,
    );
  const pages = Math.max(1, Math.ceil(page.meta.total / page.meta.per_page));
  terminal.stderr.write(
    `page ${page.meta.current_page} of ${pages} (${formatCount(page.meta.total)} ${page.meta.total === 1 ? 'job' : 'jobs'})\n`,
  );
  return 0;
}

/**
 * One job with its counts and first errors; --json prints it as the service answers it.
 * @returns 1 when lines of the job (or the job) failed, as push of the same file does; else 0.
 */
export async function showJob(
  client: ServiceClient,
  id: string,
  options: { language: string; json: boolean },
  terminal: Terminal,
): Promise<number> {
  const { bulk_job: job } = await client.getJson<{ bulk_job: BulkJob }>(bulkPath(options.language, `/${encodeURIComponent(id)}`));
  if (options.json) {
    terminal.stdout.write(`${JSON.stringify(job)}\n`);
    return jobFailed(job) ? 1 : 0;
  }
  const fields: Array<[string, string | null]> = [
    ['job', job.id],
    ['status', job.status],
    ['lines', formatCount(job.lines)],
    ['stored', formatCount(job.lines_stored)],
    ['applied', formatCount(job.lines_applied)],
    ['saved', formatCount(job.saved)],
    ['failed', formatCount(job.failed)],
    ['error', job.error],
    ['created', job.created_at],
    ['started', job.started_at],
    ['finished', job.finished_at],
  ];
  for (const [name, value] of fields) if (value !== null) terminal.stdout.write(`${`${name}:`.padEnd(10)}${value}\n`);
  for (const item of job.errors) terminal.stdout.write(`line ${item.line}: ${errorText(item.error, 400)}\n`);
  if (job.failed > job.errors.length)
    terminal.stdout.write(
      `... ${formatCount(job.failed - job.errors.length)} more: push with --errors-to FILE, or GET ${bulkPath(options.language, `/${job.id}/errors`)}\n`,
    );
  return jobFailed(job) ? 1 : 0;
}

import type { Figure } from './context.js';
import { MIXED_PAGES } from './phases/mixed.js';
import { READ_PAGES } from './phases/reads.js';
import { SCALE_FIGURES, SCALE_TARGET } from './phases/scale.js';

/** The printed table of a run's figures: each beside its floor, their ratio and its target. */
export function resultsTable(results: Record<string, Figure>): string {
  const value = (key: string) => (results[key] === undefined || results[key] === null ? '' : String(results[key]));
  const has = (key: string) => results[key] !== undefined;
  const rows: string[][] = [['figure', 'service', 'floor', 'ratio', 'target']];
  const row = (figure: string, service: string, floor = '', ratio = '', target = '') => rows.push([figure, service, floor, ratio, target]);
  if (has('writes.rps')) {
    row('single writes req/s', value('writes.rps'), value('writes.floor_rps'), value('writes.rps_ratio'), '>= 0.6 (0.75)');
    row('single writes p50 ms', value('writes.p50_ms'), value('writes.floor_p50_ms'));
    row('single writes p99 ms', value('writes.p99_ms'), value('writes.floor_p99_ms'), value('writes.p99_ratio'), '<= 3 (2)');
    const apiCpu = Number(results['writes.api_cpu_us']);
    const floorCpu = Number(results['writes.floor_cpu_us']);
    row(
      'API CPU µs per write',
      value('writes.api_cpu_us'),
      value('writes.floor_cpu_us'),
      floorCpu ? (apiCpu / floorCpu).toFixed(2) : '',
      '<= 2',
    );
    row('single writes per statement', value('writes.writes_per_statement'));
    row('API system calls per write', value('writes.api_syscalls_per_write'), value('writes.floor_syscalls_per_write'));
    row('Postgres CPU µs per write', value('writes.pg_cpu_us'), value('writes.floor_pg_cpu_us'));
    row('Postgres background CPU µs per write', value('writes.pg_background_cpu_us'), value('writes.floor_pg_background_cpu_us'));
    row('worker CPU µs per change', value('writes.worker_cpu_us_per_change'));
    row('worker catch-up s', value('writes.catch_up_s'), '', '', '<= 2');
    row(
      'peak RSS MiB (writes)',
      `api ${value('writes.api_rss_mib')}, worker ${value('writes.worker_rss_mib')}`,
      value('writes.floor_rss_mib'),
    );
  }
  if (has('uploads.read_p99_ms')) {
    row(
      'reads during 20 MB newline uploads p50/p99 ms',
      `${value('uploads.read_p50_ms')} / ${value('uploads.read_p99_ms')} (${value('uploads.files_accepted')} of ${value('uploads.files')} files taken)`,
      '',
      '',
      'p99 <= 250',
    );
  }
  if (has('bulk.seconds')) {
    const projected = results['bulk.projected'] ? ` (projected; ${value('bulk.pending_at_end')} effects pending)` : '';
    row(
      `bulk ${value('bulk.lines')} lines s`,
      `${value('bulk.seconds')}${projected}`,
      value('bulk.floor_seconds'),
      value('bulk.ratio'),
      '<= 2',
    );
    row('bulk lines stored s / lag s', `${value('bulk.lines_stored_s')} / ${value('bulk.lag_s')}`, '', '', 'lag <= 15');
    row('bulk lines/s', value('bulk.lines_per_s'));
    row('bulk changes applied in turn / queued', `${value('bulk.changes_applied_in_turn')} / ${value('bulk.changes_applied_by_applier')}`);
    row(
      'bulk CPU µs per line (api/worker/pg)',
      `${value('bulk.api_cpu_us_per_line')} / ${value('bulk.worker_cpu_us_per_line')} / ${value('bulk.pg_cpu_us_per_line')}`,
      value('bulk.floor_pg_cpu_us_per_line'),
    );
    row(
      'bulk Postgres background CPU µs per line',
      value('bulk.pg_background_cpu_us_per_line'),
      value('bulk.floor_pg_background_cpu_us_per_line'),
    );
    row('peak RSS MiB (bulk)', `api ${value('bulk.api_rss_mib')}, worker ${value('bulk.worker_rss_mib')}`);
  }
  if (has('profiles.seconds')) {
    row(
      `customer file: ${value('profiles.lines')} profiles s (lines/s)`,
      `${value('profiles.seconds')} (${value('profiles.lines_per_s')})${results['profiles.finished'] ? '' : ', unfinished'}`,
    );
    row(
      'customer file CPU µs per line (api/worker/pg)',
      `${value('profiles.api_cpu_us_per_line')} / ${value('profiles.worker_cpu_us_per_line')} / ${value('profiles.pg_cpu_us_per_line')}`,
    );
  }
  for (const [name, target] of READ_PAGES) {
    const key = `reads.${name}`;
    if (results[`${key}.skipped`]) row(`v2 ${name}`, value(`${key}.skipped`));
    else if (has(`${key}.p99_ms`)) {
      row(`v2 ${name} p50/p99 ms`, `${value(`${key}.p50_ms`)} / ${value(`${key}.p99_ms`)}`, '', '', target ? `p99 <= ${target}` : '');
      row(`v2 ${name} CPU µs per page (api/pg)`, `${value(`${key}.api_cpu_us`)} / ${value(`${key}.pg_cpu_us`)}`);
    }
  }
  if (has('reads.pages.reused')) {
    row('v2 pages read / stale / reused', `${value('reads.pages.read')} / ${value('reads.pages.stale')} / ${value('reads.pages.reused')}`);
  }
  if (results['reads.cursor.skipped']) row('v2 cursor walk', value('reads.cursor.skipped'));
  else if (has('reads.cursor.pages')) {
    row(
      'v2 cursor walk first/last p50 ms',
      `${value('reads.cursor.first_p50_ms')} / ${value('reads.cursor.last_p50_ms')} (${value('reads.cursor.pages')} pages${results['reads.cursor.complete'] ? '' : ', capped'})`,
      '',
      '',
      'last ≈ first',
    );
  }
  if (results['reads.mixed.skipped']) row('v2 pages while written', value('reads.mixed.skipped'));
  for (const [name, target] of MIXED_PAGES) {
    const key = `reads.mixed.${name}`;
    if (!has(`${key}.p99_ms`)) continue;
    row(
      `v2 ${name} while written p50/p99 ms`,
      `${value(`${key}.p50_ms`)} / ${value(`${key}.p99_ms`)} (${value(`${key}.writes_rps`)} writes/s)`,
      '',
      '',
      target ? `p99 <= ${target}` : '',
    );
    row(`v2 ${name} while written CPU µs per page (api/pg)`, `${value(`${key}.api_cpu_us`)} / ${value(`${key}.pg_cpu_us`)}`);
  }
  if (has('feed.read_entries_per_s')) {
    row(
      'feed entries/s read from the start',
      `${value('feed.read_entries_per_s')} (${value('feed.entries')} entries${results['feed.complete'] ? '' : ', capped'})`,
      '',
      '',
      '>= 50000',
    );
  }
  if (results['feed.webhook_skipped']) row('webhook entries/s delivered', value('feed.webhook_skipped'));
  else if (has('feed.webhook_entries_per_s')) {
    row(
      'webhook entries/s delivered from the start',
      `${value('feed.webhook_entries_per_s')} (${value('feed.webhook_entries')} entries${results['feed.webhook_complete'] ? '' : ', capped'})`,
      '',
      '',
      '>= 20000',
    );
    row(
      'webhook CPU µs per entry (worker/pg)',
      `${value('feed.webhook_worker_cpu_us_per_entry')} / ${value('feed.webhook_pg_cpu_us_per_entry')}`,
    );
  }
  if (has('webhooks.writes_rps_ratio')) {
    row(
      'single writes req/s with a webhook / without',
      `${value('webhooks.writes_rps_with')} / ${value('webhooks.writes_rps_without')}`,
      '',
      value('webhooks.writes_rps_ratio'),
      '>= 0.95',
    );
    row('API CPU µs per write with a webhook / without', `${value('webhooks.api_cpu_us_with')} / ${value('webhooks.api_cpu_us_without')}`);
  }
  if (has('feed.webhook_lag_p99_ms')) {
    row(
      `webhook lag p50/p99 ms at ${value('feed.webhook_lag_writes_per_s')} writes/s`,
      `${value('feed.webhook_lag_p50_ms')} / ${value('feed.webhook_lag_p99_ms')} (${value('feed.webhook_lag_missing')} missing)`,
      '',
      '',
      'p99 <= 1000',
    );
  }
  if (has('retention.prune_ms')) {
    row(
      `audit blocks removed (${value('retention.entries_removed')} entries) ms`,
      `${value('retention.prune_ms')} (${value('retention.blocks_dropped')} blocks)`,
    );
    row(
      'single writes during the removal p99 ms / failed',
      `${value('retention.writes_p99_ms_during_prune')} / ${value('retention.writes_failed_during_prune')} (around it: ${value('retention.writes_p99_ms_around_prune')})`,
      '',
      '',
      'failed = 0',
    );
  }
  if (has('scale.grow.records')) {
    row(
      'scale: grown language (products / audit entries)',
      `${value('scale.grow.records')} / ${value('scale.grow.audit_entries')} (${value('scale.grow.database_gib')} GiB; grown in ${value('scale.grow.seconds')} s)`,
    );
  }
  for (const [group, figure, label, better] of SCALE_FIGURES) {
    const key = `scale.${group}.${figure}`;
    if (!has(`${key}.empty`)) continue;
    const target = { less: `<= ${SCALE_TARGET}`, more: `>= ${(1 / SCALE_TARGET).toFixed(2)}`, grows: 'with the list' }[better];
    row(`scale: ${label} (empty → grown)`, `${value(`${key}.empty`)} → ${value(`${key}.grown`)}`, '', value(`${key}.ratio`), target);
  }
  if (has('reads.page_1.api_rss_mib')) row('peak RSS MiB (reads)', `api ${value('reads.page_1000.api_rss_mib')}`);
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((cells) => (cells[column] ?? '').length)));
  return rows.map((cells) => cells.map((cell, column) => (cell ?? '').padEnd(widths[column]!)).join(' | ')).join('\n');
}

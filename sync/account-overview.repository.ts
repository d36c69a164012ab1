import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

/*
 * sync-status per account, with what an operator looks at next (the admin
 * landing page, GET /admin/api/accounts). `pending` and `set_aside` count as
 * sync-status does (status.repository.ts): outbox rows not applied plus the
 * lines of unfinished bulk files not stored yet, and changes set aside.
 * Records are the live-record totals the v2 lists keep (record_count_deltas),
 * so no record is counted here.
 */

export const accountOverviewRow = z.object({
  account: z.string(),
  languages: z.number(),
  records: z.number(),
  pending: z.number(),
  set_aside: z.number(),
  bulk_files_queued: z.number(),
  bulk_files_running: z.number(),
});
export type AccountOverviewRow = z.infer<typeof accountOverviewRow>;

export async function accountOverview(db: CommonQueryMethods, filter: { account?: string }): Promise<readonly AccountOverviewRow[]> {
  const only = filter.account === undefined ? sql.fragment`TRUE` : sql.fragment`a.name = ${filter.account}`;
  return db.any(sql.type(accountOverviewRow)`
    WITH live_languages AS (
      SELECT account_id, count(*) AS languages FROM languages WHERE deleted_at IS NULL GROUP BY account_id
    ), records AS (
      SELECT l.account_id, sum(d.delta) AS records
      FROM record_count_deltas d JOIN languages l ON l.lang_key = d.lang_key
      WHERE l.deleted_at IS NULL
      GROUP BY l.account_id
    ), changes AS (
      SELECT account_id,
        count(*) FILTER (WHERE failed_at IS NULL) AS pending,
        count(*) FILTER (WHERE failed_at IS NOT NULL) AS set_aside
      FROM outbox GROUP BY account_id
    ), files AS (
      SELECT account_id,
        count(*) FILTER (WHERE status = 'queued') AS queued,
        count(*) FILTER (WHERE status = 'running') AS running,
        sum(greatest(lines - saved - failed, 0)) AS unstored
      FROM bulk_jobs WHERE status IN ('queued', 'running') GROUP BY account_id
    )
    SELECT a.name AS account,
      coalesce(l.languages, 0)::int8 AS languages,
      coalesce(r.records, 0)::int8 AS records,
      (coalesce(c.pending, 0) + coalesce(f.unstored, 0))::int8 AS pending,
      coalesce(c.set_aside, 0)::int8 AS set_aside,
      coalesce(f.queued, 0)::int8 AS bulk_files_queued,
      coalesce(f.running, 0)::int8 AS bulk_files_running
    FROM accounts a
    LEFT JOIN live_languages l ON l.account_id = a.id
    LEFT JOIN records r ON r.account_id = a.id
    LEFT JOIN changes c ON c.account_id = a.id
    LEFT JOIN files f ON f.account_id = a.id
    WHERE ${only}
    ORDER BY a.name
  `);
}

import type { Job } from 'bullmq';
import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

/*
 * What a queue job is about, for people: a job carries internal keys only
 * (`langKey`, `bulkJobId`), which name no shop. Read when the dashboard shows
 * jobs, from Postgres, so every job (a sweeper's too, or one queued before an
 * upgrade) is named the same way and the jobs themselves stay as they are:
 * their names still pick the processor, their ids still deduplicate them.
 */

const languageLabel = z.object({ lang_key: z.number(), account: z.string(), language_id: z.string() });
const fileLabel = z.object({ id: z.string(), account: z.string(), language_id: z.string() });

const numeric = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value);
const uuid = (value: unknown): value is string => typeof value === 'string' && z.string().uuid().safeParse(value).success;

/** `<job name> · <account> / <language>[ / file <id>]` for each job whose data names a language or a bulk file. */
export async function jobLabels(db: CommonQueryMethods, jobs: readonly Job[]): Promise<Map<Job, string>> {
  const langKeys = [...new Set(jobs.map((job) => job.data?.langKey).filter(numeric))];
  const fileIds = [...new Set(jobs.map((job) => job.data?.bulkJobId).filter(uuid))];
  const [languages, files] = await Promise.all([
    langKeys.length === 0
      ? []
      : db.any(sql.type(languageLabel)`
          SELECT l.lang_key, a.name AS account, l.id AS language_id
          FROM languages l JOIN accounts a ON a.id = l.account_id
          WHERE l.lang_key = ANY(${sql.array(langKeys, 'int8')})
        `),
    fileIds.length === 0
      ? []
      : db.any(sql.type(fileLabel)`
          SELECT j.id::text AS id, a.name AS account, j.language_id
          FROM bulk_jobs j JOIN accounts a ON a.id = j.account_id
          WHERE j.id = ANY(${sql.array(fileIds, 'uuid')})
        `),
  ]);
  const ofLanguage = new Map(languages.map((row) => [row.lang_key, `${row.account} / ${row.language_id}`]));
  const ofFile = new Map(files.map((row) => [row.id, `${row.account} / ${row.language_id} / file ${row.id}`]));
  const labels = new Map<Job, string>();
  for (const job of jobs) {
    const about = ofFile.get(job.data?.bulkJobId) ?? ofLanguage.get(job.data?.langKey);
    if (about) labels.set(job, `${job.name} · ${about}`);
  }
  return labels;
}

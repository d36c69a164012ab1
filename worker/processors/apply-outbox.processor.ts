import { UnrecoverableError } from 'bullmq';
import { drainLanguage } from '../../sync/drain.js';
import type { Processor } from './processor.js';

export const applyOutboxProcessor: Processor<'apply-outbox'> = async (job, { db, logger, drainOptions }) => {
  const { langKey } = job.data;
  if (!Number.isSafeInteger(langKey)) throw new UnrecoverableError('apply-outbox needs a numeric langKey');
  return drainLanguage(db, langKey, logger, drainOptions);
};

import { UnrecoverableError } from 'bullmq';
import { drainLanguage } from '../../sync/drain.js';
import type { Processor } from './processor.js';

export const applyOutboxProcessor: Processor<'apply-outbox'> = async (job, { db, logger, notifier, drainOptions, positions }) => {
  const { langKey } = job.data;
  if (!Number.isSafeInteger(langKey)) throw new UnrecoverableError('apply-outbox needs a numeric langKey');
  const result = await drainLanguage(db, langKey, logger, drainOptions);
  if (positions && result.applied > 0) await positions.wroteIn(langKey);
  // A run is bounded (APPLIER_RUN_MS): a language with more to do takes its next turn behind the work waiting now.
  if (result.more) notifier.notify(langKey, job.data.requestId, true);
  else if (result.busy) notifier.notifyAgainSoon(langKey, job.data.requestId);
  return result;
};

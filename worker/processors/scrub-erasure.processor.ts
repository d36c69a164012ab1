import { UnrecoverableError } from 'bullmq';
import { scrubErasure } from '../../erasures/erasure-scrub.service.js';
import type { Processor } from './processor.js';

/** An erasure applied in all its languages: every stored copy of the person's data scrubbed, then completed (interface §24). */
export const scrubErasureProcessor: Processor<'scrub-erasure'> = async (job, { db }) => {
  const { erasureId } = job.data;
  if (typeof erasureId !== 'string') throw new UnrecoverableError('scrub-erasure needs an erasureId');
  return { erasureId, changed: await scrubErasure(db, erasureId) };
};

import { UnrecoverableError } from 'bullmq';
import { deliverPair } from '../../webhooks/delivery.service.js';
import type { Processor } from './processor.js';

/** Delivers a webhook's entries of one language (interface §23); a pair with more left is woken again by the waker. */
export const deliverWebhookProcessor: Processor<'deliver-webhook'> = async (job, { db, logger, webhooks }) => {
  const { accountId, webhookId, langKey } = job.data;
  if (!Number.isSafeInteger(accountId) || !Number.isSafeInteger(langKey) || typeof webhookId !== 'string')
    throw new UnrecoverableError('deliver-webhook needs accountId, webhookId and langKey');
  const more = await deliverPair(db, { accountId, webhookId, langKey }, webhooks.options, logger);
  if (more) webhooks.wake();
  return { more };
};

import { UnrecoverableError } from 'bullmq';
import { deliverPair } from '../../webhooks/delivery.service.js';
import type { Processor } from './processor.js';

/** Delivers a webhook's entries of one language (interface §23); a pair with more left is queued again at once. */
export const deliverWebhookProcessor: Processor<'deliver-webhook'> = async (job, { logger, webhooks }) => {
  const { accountId, webhookId, langKey } = job.data;
  if (!Number.isSafeInteger(accountId) || !Number.isSafeInteger(langKey) || typeof webhookId !== 'string')
    throw new UnrecoverableError('deliver-webhook needs accountId, webhookId and langKey');
  const pair = { accountId, webhookId, langKey };
  const more = await webhooks.whileRunning(pair, () => deliverPair(webhooks.db, pair, webhooks.options, logger));
  if (more) await webhooks.continue(pair);
  return { more };
};

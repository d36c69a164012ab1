import { type JobName, QUEUES } from '../../platform/queue.js';
import { applyOutboxProcessor } from './apply-outbox.processor.js';
import { applyRetentionProcessor } from './apply-retention.processor.js';
import { deliverWebhookProcessor } from './deliver-webhook.processor.js';
import { processBulkProcessor } from './process-bulk.processor.js';
import type { ProcessorRegistry } from './processor.js';
import { purgeExpiredTokensProcessor } from './purge-expired-tokens.processor.js';
import { purgeLanguageProcessor } from './purge-language.processor.js';
import { scrubErasureProcessor } from './scrub-erasure.processor.js';

export const processors: ProcessorRegistry = {
  'apply-outbox': applyOutboxProcessor,
  'purge-language': purgeLanguageProcessor,
  'purge-expired-tokens': purgeExpiredTokensProcessor,
  'process-bulk': processBulkProcessor,
  'deliver-webhook': deliverWebhookProcessor,
  'apply-retention': applyRetentionProcessor,
  'scrub-erasure': scrubErasureProcessor,
};

/**
 * Start-up check: every job name a queue carries has a processor.
 * @throws naming the job names without one.
 */
export function assertRegistryComplete(registry: Partial<Record<string, unknown>>): void {
  const declared: JobName[] = Object.values(QUEUES).flatMap((queue) => [...queue.jobs]);
  const missing = declared.filter((name) => typeof registry[name] !== 'function');
  if (missing.length > 0) throw new Error(`No processor registered for job name(s): ${missing.join(', ')}`);
}

import type { Database } from '../platform/db.js';
import type { OutboxNotifier } from '../sync/outbox.notifier.js';
import type { ChangeOrigin } from '../sync/write.repository.js';

/** A write request: its account, client and request id, and where its changes go. */
export interface WriteContext {
  db: Database;
  notifier: OutboxNotifier;
  accountId: number;
  clientId: string;
  requestId: string;
}

/** The origin of the changes a request makes in a language (stored with each change and its audit entries). */
export const originOf = (context: Pick<WriteContext, 'accountId' | 'clientId' | 'requestId'>, languageId: string): ChangeOrigin => ({
  accountId: context.accountId,
  languageId,
  actor: context.clientId,
  requestId: context.requestId,
});

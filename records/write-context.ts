import type { Database } from '../platform/db.js';
import type { OutboxNotifier } from '../sync/outbox.notifier.js';
import type { PreparedWriter } from '../sync/prepared-write.js';
import type { ChangeOrigin } from '../sync/write.repository.js';
import type { LiveLanguages } from './live-languages.js';

/** What writes are made with: the database, the process's live languages, the single-write statement and the applier's wake-up call. */
export interface WriteServices {
  db: Database;
  languages: LiveLanguages;
  writer: PreparedWriter;
  notifier: OutboxNotifier;
}

/** A write request: its account, client and request id, and where its changes go. */
export interface WriteContext extends WriteServices {
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

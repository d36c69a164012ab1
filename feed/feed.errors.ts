import { AppError, RetryShortlyError } from '../platform/errors.js';

/**
 * 410: the cursor points before the retained history, or into a language id
 * that was deleted and created again since (interface §22.6). The consumer
 * re-reads the lists and starts again from `from=now`.
 */
export class CursorExpiredError extends AppError {
  readonly status = 410;
  constructor() {
    super('The cursor is older than the retained history of this language: re-read the lists and start again from ?from=now');
  }
  body() {
    return { error: { message: this.message, reason: 'cursor_expired' } };
  }
}

/** 503: a batch writing the language's audit entries stayed open too long to know which of them are final. */
export class FeedHorizonBusyError extends RetryShortlyError {
  constructor() {
    super('The change feed of this language is being written; retry shortly');
  }
}

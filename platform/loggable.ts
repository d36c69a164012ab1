/**
 * What a log line may say about an error or a message from elsewhere: no
 * stack trace, no SQL, no values a client sent (docs/operations.md, "Logs carry no personal data").
 *
 * Postgres quotes the values it complains about (`invalid input syntax for
 * type json: "…"`), and a receiver's or a driver's message can carry anything,
 * so quoted parts and email addresses are masked; the SQLSTATE and constraint
 * name say what went wrong without the data.
 */

const QUOTED = /"[^"]*"|'[^']*'/g;
const EMAIL = /[^\s@"'<>(),;:]+@[^\s@"'<>(),;:]+/g;
/** Long enough for a driver's message, short enough that a dumped body cannot ride along. */
const MAX_MESSAGE = 300;

/** The text with quoted parts and email addresses masked, cut to a bounded length. */
export function maskText(text: string): string {
  const masked = text.replace(QUOTED, '"…"').replace(EMAIL, '[email]');
  return masked.length > MAX_MESSAGE ? `${masked.slice(0, MAX_MESSAGE)}…` : masked;
}

export interface LoggableError {
  type: string;
  message: string;
  code?: string;
  constraint?: string;
  cause?: LoggableError;
}

/** An error as a log line carries it: its class, masked message, SQLSTATE and constraint; the cause likewise. */
export function loggableError(error: unknown, depth = 0): LoggableError | string {
  if (typeof error === 'string') return maskText(error);
  if (!(error instanceof Error)) return maskText(String(error));
  const fields = error as Error & { code?: unknown; constraint?: unknown; cause?: unknown };
  const loggable: LoggableError = { type: error.constructor?.name ?? 'Error', message: maskText(error.message) };
  if (typeof fields.code === 'string') loggable.code = fields.code;
  if (typeof fields.constraint === 'string') loggable.constraint = fields.constraint;
  if (fields.cause !== undefined && depth < 3) {
    const cause = loggableError(fields.cause, depth + 1);
    if (typeof cause !== 'string') loggable.cause = cause;
  }
  return loggable;
}

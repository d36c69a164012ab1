import type { DestinationStream } from 'pino';
import { type Logger, pino } from 'pino';
import { loggableError, maskText } from './loggable.js';

export type { Logger };

/**
 * The service's logger. Every `err` field goes through loggableError (no
 * stack, no SQL, no values), and `reason` and `error` strings are masked;
 * nothing logs a request body (docs/operations.md, "Logs carry no personal data").
 */
export function createLogger(level: string, name: string, destination?: DestinationStream): Logger {
  const options = {
    name,
    level,
    base: { pid: process.pid, service: name },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: (error: unknown) => loggableError(error), reason: maskUnknown, error: maskUnknown },
    redact: {
      paths: ['req.headers.authorization', 'client_secret', '*.client_secret', 'access_token', '*.access_token', 'secret', '*.secret'],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

const maskUnknown = (value: unknown): unknown =>
  typeof value === 'string' ? maskText(value) : value instanceof Error ? loggableError(value) : value;

import { type Logger, pino } from 'pino';

export type { Logger };

export function createLogger(level: string, name: string): Logger {
  return pino({
    name,
    level,
    base: { pid: process.pid, service: name },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['req.headers.authorization', 'client_secret', '*.client_secret', 'access_token', '*.access_token'],
      censor: '[redacted]',
    },
  });
}

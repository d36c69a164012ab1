import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../platform/logger.js';

export interface CapturedLogs {
  logger: Logger;
  lines: Array<Record<string, unknown>>;
}

/** The service's own logger, its JSON lines kept in memory, so a test can read what was logged. */
export function captureLogs(level = 'debug'): CapturedLogs {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  return { logger: createLogger(level, 'test', stream), lines };
}

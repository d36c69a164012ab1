import { type Config, ConfigError, loadConfig } from '../platform/config.js';

/** Loads the configuration or exits with a message naming the bad variables. */
export function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

/** Closes `stop` on SIGTERM or SIGINT, then exits 0 (or 1 if closing fails or takes longer than `graceMs`). */
export function onShutdown(stop: () => Promise<void>, graceMs = 25_000): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`${signal} received, shutting down\n`);
    const timer = setTimeout(() => {
      process.stderr.write('shutdown took too long, exiting\n');
      process.exit(1);
    }, graceMs);
    timer.unref();
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

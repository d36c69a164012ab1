import { type Config, ConfigError, loadConfig } from '../platform/config.js';
import { checkPostgres, checkRedis, StartupError } from '../platform/preflight.js';

/**
 * `--help` (or `-h`) prints the usage and exits 0; any other argument is a
 * mistake: the usage on stderr and exit 2. For the commands that take no
 * arguments (api, worker, start, migrate).
 */
export function helpOrExit(usage: string, argv: string[] = process.argv.slice(2)): void {
  if (argv.length === 0) return;
  if (argv.some((arg) => arg === '--help' || arg === '-h')) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  process.stderr.write(`Unknown argument: ${argv[0]}\n${usage}\n`);
  process.exit(2);
}

/** What every service command says about its configuration. */
export const CONFIGURATION_HELP =
  'Configured by environment variables (DATABASE_URL, REDIS_URL, PORT, ...; see README "Configuration" and .env.example),\n' +
  'and by a .env file in the working directory for those the environment leaves unset.';

/**
 * Reads `.env` of the working directory into the environment, with Node's own parser (the format of
 * `.env.example`). A variable the real environment sets already keeps its value (even an empty one): the
 * file only fills in what is unset. No file is fine; a file that cannot be read is one line and exit 1.
 */
export function loadEnvFileOrExit(file = '.env'): void {
  try {
    process.loadEnvFile(file);
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return;
    process.stderr.write(`Cannot read ${file}: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

/** Loads the configuration (the environment, then `.env`) or exits with a message naming the bad variables. */
export function configOrExit(): Config {
  loadEnvFileOrExit();
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

/**
 * Runs the start-up of a command: a dependency that is missing (Postgres or
 * Redis unreachable, the database missing or not migrated) or any other
 * failure to start is one line on stderr and exit code 1, never a stack trace.
 */
export async function startupOrExit<T>(start: () => Promise<T>, failure = 'Could not start'): Promise<T> {
  try {
    return await start();
  } catch (error) {
    const message = error instanceof StartupError ? error.message : `${failure}: ${(error as Error).message}`;
    process.stderr.write(`${message.replace(/\s*\n\s*/g, ' ')}\n`);
    process.exit(1);
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

/**
 * Runs one service of a migrated deployment (the API, a worker): the usage
 * on --help, then the configuration, Postgres and Redis checked, the service
 * started, and closed on SIGTERM or SIGINT.
 */
export async function runService(usage: string, start: (config: Config) => Promise<{ close(): Promise<void> }>): Promise<void> {
  helpOrExit(usage);
  const config = configOrExit();
  // Signals are handled from the first moment: a SIGTERM while starting waits for the start, then closes cleanly.
  const starting = startupOrExit(async () => {
    await checkPostgres(config.DATABASE_URL, 'migrated');
    await checkRedis(config.REDIS_URL);
    return start(config);
  });
  onShutdown(async () => (await starting).close());
  await starting;
}

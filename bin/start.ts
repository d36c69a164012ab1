import { startApi } from '../api/server.js';
import { createLogger } from '../platform/logger.js';
import { describeMigration, migrate } from '../platform/migrator.js';
import { checkPostgres, checkRedis } from '../platform/preflight.js';
import { startWorker } from '../worker/worker.js';
import { CONFIGURATION_HELP, configOrExit, helpOrExit, onShutdown, startupOrExit } from './run.js';

helpOrExit(`Usage: npm start   (built: npm run start:prod)
Migrates the database (creating it when missing), then runs the API and one worker in one process; Ctrl-C stops both.
${CONFIGURATION_HELP}`);
// One process for local use: migrate, then the API and one worker side by side.
const config = configOrExit();
const starting = startupOrExit(async () => {
  await checkPostgres(config.DATABASE_URL, 'server');
  await checkRedis(config.REDIS_URL);
  const migration = await migrate(config.DATABASE_URL);
  // The first thing said: what happened to the database (created, migrated or already up to date).
  const name = decodeURIComponent(new URL(config.DATABASE_URL).pathname.slice(1));
  createLogger(config.LOG_LEVEL, 'start').info({ database: name, applied: migration.applied.length }, describeMigration(name, migration));
  const api = await startApi(config);
  const worker = await startWorker(config);
  return { api, worker };
});
// Signals are handled from the first moment: Ctrl-C while starting waits for the start, then closes cleanly.
onShutdown(async () => {
  const { api, worker } = await starting;
  await api.close();
  await worker.close();
});
await starting;

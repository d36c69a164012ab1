import { migrateCommand } from '../platform/commands.js';
import { checkPostgres, checkRedis } from '../platform/preflight.js';
import { startWorker } from '../worker/worker.js';
import { CONFIGURATION_HELP, configOrExit, helpOrExit, onShutdown, startupOrExit } from './run.js';

helpOrExit(`Usage: npm run start:worker   (built: node dist/bin/worker.js)
Runs a worker (effects, bulk files, maintenance); run as many as you like. Needs a migrated database (${migrateCommand()}) and Redis.
${CONFIGURATION_HELP}`);
const config = configOrExit();
// Signals are handled from the first moment: a SIGTERM while starting waits for the start, then closes cleanly.
const starting = startupOrExit(async () => {
  await checkPostgres(config.DATABASE_URL, 'migrated');
  await checkRedis(config.REDIS_URL);
  return startWorker(config);
});
onShutdown(async () => (await starting).close());
await starting;

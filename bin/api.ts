import { startApi } from '../api/server.js';
import { migrateCommand } from '../platform/commands.js';
import { checkPostgres, checkRedis } from '../platform/preflight.js';
import { CONFIGURATION_HELP, configOrExit, helpOrExit, onShutdown, startupOrExit } from './run.js';

helpOrExit(`Usage: npm run start:api   (built: node dist/bin/api.js)
Runs the HTTP API; run as many as you like. Needs a migrated database (${migrateCommand()}) and Redis.
${CONFIGURATION_HELP}`);
const config = configOrExit();
// Signals are handled from the first moment: a SIGTERM while starting waits for the start, then closes cleanly.
const starting = startupOrExit(async () => {
  await checkPostgres(config.DATABASE_URL, 'migrated');
  await checkRedis(config.REDIS_URL);
  return startApi(config);
});
onShutdown(async () => (await starting).close());
await starting;

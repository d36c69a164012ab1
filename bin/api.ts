import { startApi } from '../api/server.js';
import { migrateCommand } from '../platform/commands.js';
import { CONFIGURATION_HELP, runService } from './run.js';

await runService(
  `Usage: npm run start:api   (built: node dist/bin/api.js)
Runs the HTTP API; run as many as you like. Needs a migrated database (${migrateCommand()}) and Redis.
${CONFIGURATION_HELP}`,
  startApi,
);

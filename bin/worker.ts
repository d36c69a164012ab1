import { migrateCommand } from '../platform/commands.js';
import { startWorker } from '../worker/worker.js';
import { CONFIGURATION_HELP, runService } from './run.js';

await runService(
  `Usage: npm run start:worker   (built: node dist/bin/worker.js)
Runs a worker (effects, bulk files, maintenance); run as many as you like. Needs a migrated database (${migrateCommand()}) and Redis.
${CONFIGURATION_HELP}`,
  startWorker,
);

import { migrate } from '../platform/migrator.js';
import { checkPostgres } from '../platform/preflight.js';
import { CONFIGURATION_HELP, configOrExit, helpOrExit, startupOrExit } from './run.js';

helpOrExit(`Usage: npm run migrate   (built: node dist/bin/migrate.js)
Creates the database of DATABASE_URL when it is missing, then applies every pending migration. Safe to run from several processes at once.
${CONFIGURATION_HELP}`);
const config = configOrExit();
const result = await startupOrExit(async () => {
  await checkPostgres(config.DATABASE_URL, 'server');
  return migrate(config.DATABASE_URL);
}, 'Migration failed');
if (result.createdDatabase) process.stdout.write('created database\n');
process.stdout.write(result.applied.length ? `applied ${result.applied.join(', ')}\n` : 'migrations up to date\n');

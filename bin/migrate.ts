import { migrate } from '../platform/migrator.js';
import { configOrExit } from './run.js';

const config = configOrExit();
try {
  const result = await migrate(config.DATABASE_URL);
  if (result.createdDatabase) process.stdout.write('created database\n');
  process.stdout.write(result.applied.length ? `applied ${result.applied.join(', ')}\n` : 'migrations up to date\n');
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`);
  process.exit(1);
}

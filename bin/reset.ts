import { parseArgs } from 'node:util';
import { removeLimitCounters } from '../auth/request-limiter.js';
import { dropDatabaseOf, migrate } from '../platform/migrator.js';
import { checkPostgres, checkRedis } from '../platform/preflight.js';
import { removeQueues } from '../platform/queue.js';
import { createRedis } from '../platform/redis.js';
import { CONFIGURATION_HELP, configOrExit, startupOrExit } from './run.js';

const USAGE = `Usage: npm run reset -- --yes   (built: node dist/bin/reset.js --yes)
For development: drops the database of DATABASE_URL and creates it again, migrated and empty (accounts,
clients and every record are gone), and removes every queue and limit counter of QUEUE_PREFIX from Redis. Stop the API and
workers first. Refused when NODE_ENV=production.
${CONFIGURATION_HELP}`;

let yes = false;
try {
  const { values } = parseArgs({ options: { yes: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, strict: true });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  yes = values.yes === true;
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
  process.exit(2);
}
const config = configOrExit();
if (config.NODE_ENV === 'production') {
  process.stderr.write('Refusing to reset: NODE_ENV is production. A reset deletes every account, client and record.\n');
  process.exit(1);
}
if (!yes) {
  process.stderr.write(`This deletes everything in ${new URL(config.DATABASE_URL).pathname.slice(1)}: add --yes to go ahead.\n${USAGE}\n`);
  process.exit(2);
}

const redis = createRedis(config.REDIS_URL, 'worker');
redis.on('error', () => undefined);
try {
  await startupOrExit(async () => {
    await checkPostgres(config.DATABASE_URL, 'server');
    await checkRedis(config.REDIS_URL);
    await dropDatabaseOf(config.DATABASE_URL);
    await migrate(config.DATABASE_URL);
    // Jobs of the old database would name languages and bulk files that no longer exist.
    await removeQueues(redis, config.QUEUE_PREFIX);
    // Limit counters and trusted sign-in addresses name accounts and clients of the old database.
    await removeLimitCounters(redis, config.QUEUE_PREFIX);
  }, 'Reset failed');
} finally {
  redis.disconnect();
}
process.stdout.write(
  `reset ${new URL(config.DATABASE_URL).pathname.slice(1)}: dropped, created and migrated; queues and limit counters of prefix "${config.QUEUE_PREFIX}" removed\n`,
);

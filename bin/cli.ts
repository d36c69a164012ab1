import { parseArgs } from 'node:util';
import { createClient } from '../auth/auth.service.js';
import { listClients, revokeClient, setAccountLimit } from '../auth/client.repository.js';
import { migrateCommand } from '../platform/commands.js';
import { createDatabase, type Database } from '../platform/db.js';
import { checkPostgres } from '../platform/preflight.js';
import { configOrExit, startupOrExit } from './run.js';

const USAGE = `Usage: npm run --silent cli -- <command>   (built: node dist/bin/cli.js <command>)
  create-client --account NAME   create the account if needed and a new client; prints its secret once
  list-clients                   list every client (secrets are never shown)
  revoke-client --client-id ID   revoke a client; its tokens stop working at once
  set-limit --account NAME --rps N --burst N
                                 the account's own request limit: N requests per second and N more per minute;
                                 every API process applies it from its next request (--default: back to the
                                 deployment's RATE_LIMIT_RPS / RATE_LIMIT_BURST)
The database of DATABASE_URL must exist and be migrated (${migrateCommand()}); the CLI never creates it.`;

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

/** A whole number from an option, at least `min` (and what Postgres' integer holds). */
function count(value: string | undefined, option: string, min: number): number {
  if (value === undefined) fail(`set-limit needs ${option} N (or --default)`);
  const parsed = /^\d{1,10}$/.test(value) ? Number(value) : Number.NaN;
  if (!(parsed >= min && parsed <= 2_147_483_647)) fail(`${option} must be a whole number of at least ${min}`);
  return parsed;
}

async function run(db: Database, argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: {
      account: { type: 'string' },
      'client-id': { type: 'string' },
      rps: { type: 'string' },
      burst: { type: 'string' },
      default: { type: 'boolean' },
    },
    strict: true,
  });
  switch (command) {
    case 'create-client': {
      const account = values.account?.trim();
      if (!account) fail('create-client needs --account NAME');
      process.stdout.write(`${JSON.stringify(await createClient(db, account))}\n`);
      return;
    }
    case 'list-clients': {
      for (const client of await listClients(db)) {
        process.stdout.write(
          `${JSON.stringify({ account: client.account, client_id: client.client_id, created_at: client.created_at, revoked_at: client.revoked_at })}\n`,
        );
      }
      return;
    }
    case 'revoke-client': {
      const clientId = values['client-id'];
      if (!clientId) fail('revoke-client needs --client-id ID');
      if (!(await revokeClient(db, clientId))) fail(`No client with id ${clientId}`);
      process.stdout.write(`${JSON.stringify({ client_id: clientId, revoked: true })}\n`);
      return;
    }
    case 'set-limit': {
      const account = values.account?.trim();
      if (!account) fail('set-limit needs --account NAME');
      let limit: { rps: number; burst: number } | null = null;
      if (values.default) {
        if (values.rps !== undefined || values.burst !== undefined) fail('set-limit takes --default or --rps and --burst, not both');
      } else {
        limit = { rps: count(values.rps, '--rps', 1), burst: count(values.burst, '--burst', 0) };
      }
      if (!(await setAccountLimit(db, account, limit))) fail(`No account named ${account}`);
      process.stdout.write(`${JSON.stringify({ account, rps: limit?.rps ?? null, burst: limit?.burst ?? null })}\n`);
      return;
    }
    default:
      fail(USAGE);
  }
}

const COMMANDS = ['create-client', 'list-clients', 'revoke-client', 'set-limit'];
const argv = process.argv.slice(2);
if (argv[0] === 'help' || argv.some((arg) => arg === '--help' || arg === '-h')) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
// Told before the database is looked at: a mistyped command is the problem to fix, whatever DATABASE_URL says.
if (argv[0] === undefined) fail(`a command is needed\n${USAGE}`);
if (!COMMANDS.includes(argv[0])) fail(`unknown command '${argv[0]}'\n${USAGE}`);
const config = configOrExit();
// A database that is missing or not migrated is refused, never created: a typo in DATABASE_URL would
// otherwise make a client in a database the service never reads.
await startupOrExit(() => checkPostgres(config.DATABASE_URL, 'migrated'));
let db: Database | undefined;
try {
  db = await createDatabase(config.DATABASE_URL, { maximumPoolSize: 2 });
  await run(db, argv);
} catch (error) {
  const message =
    (error as { code?: string; message: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
      ? `${(error as Error).message}\n${USAGE}`
      : (error as Error).message;
  fail(message);
} finally {
  await db?.end();
}

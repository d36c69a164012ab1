import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { EVENT_KINDS, isStoredKind, RECORD_KINDS, STORED_KINDS, type StoredKind } from '../catalogue/record-kinds.js';
import { addChangesCommand } from './changes.command.js';
import { exportRecords } from './export.command.js';
import { listJobs, showJob } from './jobs.command.js';
import { push } from './push.command.js';
import { ClientError, ServiceClient } from './service.client.js';
import type { Terminal } from './terminal.js';

/*
 * commerce-sync: the shop's command line for the service. It talks to the
 * service over HTTP only, with a client's credentials (the same as any shop
 * integration), and never touches its database.
 *
 * Exit codes: 0 done; 1 lines or a job failed (or records could not be
 * exported); 2 a usage, credentials or connection problem; 130 interrupted.
 */

const EXIT_USAGE = 2;

const positiveInteger = (name: string, max: number) => (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max)
    throw new InvalidArgumentError(`${name} must be an integer from 1 to ${max}`);
  return Number(value);
};

const kindList = (value: string, previous: StoredKind[] = []) => {
  const kinds = value.split(',').map((kind) => kind.trim());
  for (const kind of kinds)
    if (!isStoredKind(kind)) throw new InvalidArgumentError(`kind must be one of ${STORED_KINDS.join(', ')} (the last two with --api v2)`);
  return [...previous, ...(kinds as StoredKind[])];
};

export function buildProgram(terminal: Terminal, run: (code: number) => void): Command {
  const program = new Command('commerce-sync')
    .description('Push catalogue files (NDJSON) to a commerce-sync service, watch them land, and export them back.')
    .addOption(new Option('--url <url>', 'address of the service').env('SYNC_URL').default('http://localhost:3000'))
    .addOption(new Option('--client-id <id>', 'client id (from `npm run cli -- create-client`)').env('SYNC_CLIENT_ID'))
    .addOption(new Option('--client-secret <secret>', 'client secret').env('SYNC_CLIENT_SECRET'))
    .configureOutput({ writeOut: (text) => terminal.stdout.write(text), writeErr: (text) => terminal.stderr.write(text) })
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();

  const client = () => {
    const options = program.opts<{ url: string; clientId?: string; clientSecret?: string }>();
    if (!options.clientId || !options.clientSecret)
      throw new ClientError('client credentials are needed: --client-id and --client-secret, or SYNC_CLIENT_ID and SYNC_CLIENT_SECRET');
    try {
      new URL(options.url);
    } catch {
      throw new ClientError(`--url (or SYNC_URL) is not a URL: ${options.url}`);
    }
    return new ServiceClient({ url: options.url, clientId: options.clientId, clientSecret: options.clientSecret });
  };
  const language = () => new Option('-l, --language <id>', 'the language (its id, e.g. nl)').makeOptionMandatory();

  // Commander's own help command prints the usage for `help <unknown>` without saying the name is unknown.
  program.helpCommand(false);
  program
    .command('help')
    .description('display help for command')
    .argument('[command]', 'the command to describe')
    .action((name?: string) => {
      if (name === undefined) program.help();
      const command = program.commands.find((each) => each.name() === name);
      if (command) command.help();
      else program.error(`error: unknown command '${name}'`, { code: 'commander.unknownCommand', exitCode: EXIT_USAGE });
    });

  program
    .command('push')
    .description(
      'upload an NDJSON file (.ndjson, or gzip-compressed .ndjson.gz) of writes and deletes, then follow it until every line is applied',
    )
    .argument('<file>', 'one {"<kind>":{...}} or {"delete":{"kind":...,"id":...}} per line')
    .addOption(language())
    .addOption(
      new Option('--api <version>', 'the interface the lines are written for: v1 write bodies, or v2 requests (README "Bulk in v2")')
        .choices(['v1', 'v2'])
        .default('v1'),
    )
    .option('--errors-to <file>', 'write every line error there, as NDJSON ({"line":N,"error":{...}})')
    .option('--no-wait', 'print the job and return once the file is stored')
    .option('--json', 'print the finished job as JSON instead of a summary line')
    .addOption(
      new Option('--poll <ms>', 'how often to ask for progress').default(500).argParser(positiveInteger('--poll', 60_000)).hideHelp(),
    )
    .addHelpText(
      'after',
      '\nProgress goes to stderr: a bar on a terminal, a line every 2 s otherwise.\nExits 1, after a summary and the first errors, when any line failed.',
    )
    .action(
      async (
        file: string,
        options: { language: string; api: 'v1' | 'v2'; errorsTo?: string; wait: boolean; json?: boolean; poll: number },
      ) =>
        run(
          await push(
            client(),
            file,
            {
              language: options.language,
              api: options.api,
              errorsTo: options.errorsTo,
              wait: options.wait,
              json: Boolean(options.json),
              pollMs: options.poll,
            },
            terminal,
          ),
        ),
    );

  program
    .command('export')
    .description('write every record of the kinds as NDJSON lines that push reads (a round trip gives the same catalogue)')
    .addOption(language())
    .addOption(
      new Option(
        '--api <version>',
        'the line format: v1 write bodies (push), or v2 requests (push --api v2), which carry everything v2 can write',
      )
        .choices(['v1', 'v2'])
        .default('v1'),
    )
    .addOption(
      new Option(
        '-k, --kind <kinds>',
        `kinds to export, comma-separated or repeated (default: all, in the order push needs): ${STORED_KINDS.join(', ')} (the last two with --api v2)`,
      ).argParser(kindList),
    )
    .option('-o, --output <file>', 'write to this file instead of stdout')
    .action(async (options: { language: string; api: 'v1' | 'v2'; kind?: StoredKind[]; output?: string }) => {
      const v1Only = (options.kind ?? []).filter((kind) => (EVENT_KINDS as readonly string[]).includes(kind));
      if (options.api === 'v1' && v1Only.length > 0) throw new ClientError(`${v1Only.join(', ')} can only be exported with --api v2`);
      const kinds = options.kind ?? (options.api === 'v2' ? [...STORED_KINDS] : [...RECORD_KINDS]);
      run(await exportRecords(client(), { language: options.language, api: options.api, kinds, output: options.output }, terminal));
    });

  program
    .command('jobs')
    .description("list the language's bulk jobs, newest first")
    .addOption(language())
    .addOption(new Option('--page <n>', 'page').default(1).argParser(positiveInteger('--page', Number.MAX_SAFE_INTEGER)))
    .addOption(new Option('--per-page <n>', 'jobs per page').default(10).argParser(positiveInteger('--per-page', 250)))
    .option('--json', 'one JSON object per job')
    .action(async (options: { language: string; page: number; perPage: number; json?: boolean }) =>
      run(await listJobs(client(), { ...options, json: Boolean(options.json) }, terminal)),
    );

  program
    .command('job')
    .description('show one bulk job: status, counts and its first errors')
    .argument('<id>', 'the job id')
    .addOption(language())
    .option('--json', 'the job as the service answers it')
    .addHelpText('after', '\nExits 1 when any line of the job failed (or the job did), as push of the same file does.')
    .action(async (id: string, options: { language: string; json?: boolean }) =>
      run(await showJob(client(), id, { language: options.language, json: Boolean(options.json) }, terminal)),
    );

  addChangesCommand(program, client, run, terminal);

  return program;
}

/** Runs the command line and answers the exit code. */
export async function main(argv: string[], terminal: Terminal): Promise<number> {
  let code = 0;
  const program = buildProgram(terminal, (result) => {
    code = result;
  });
  if (argv.length === 0) {
    program.outputHelp();
    return 0;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : EXIT_USAGE;
    if (error instanceof ClientError) {
      terminal.stderr.write(`commerce-sync: ${error.message}\n`);
      return EXIT_USAGE;
    }
    terminal.stderr.write(`commerce-sync: ${(error as Error).message}\n`);
    return 1;
  }
}

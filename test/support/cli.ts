import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
/** Each run compiles the CLI with tsx: allow a slow machine plenty of time. */
export const CLI_TIMEOUT = 60_000;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The client-management CLI (`npm run cli -- ...`, i.e. bin/cli.ts) against the database at `databaseUrl`. */
export function runCli(databaseUrl: string, ...args: string[]): Promise<CliResult> {
  return runCliWith({ env: { ...process.env, DATABASE_URL: databaseUrl } }, ...args);
}

/** The client-management CLI run in `cwd` (the clone by default) with exactly `env`. */
export function runCliWith(options: { cwd?: string; env: NodeJS.ProcessEnv }, ...args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      TSX,
      [path.join(ROOT, 'bin/cli.ts'), ...args],
      { cwd: options.cwd ?? ROOT, env: { ...options.env, LOG_LEVEL: 'silent' }, timeout: CLI_TIMEOUT },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

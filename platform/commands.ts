import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The migrate command of this very install, for hints in messages. In a clone (this file is TypeScript) it
 * is `npm run migrate`; in the built tree (`npm run build`, as the Docker image runs it) tsx is not there
 * (a dev dependency), so it is plain node on the built file, as a path from the working directory.
 */
export function migrateCommand(cwd = process.cwd()): string {
  if (import.meta.url.endsWith('.ts')) return 'npm run migrate';
  return `node ${path.relative(cwd, fileURLToPath(new URL('../bin/migrate.js', import.meta.url)))}`;
}

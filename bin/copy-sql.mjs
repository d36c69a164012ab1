// Part of `npm run build`: the migrator reads its SQL files relative to its own module, so they go beside the JavaScript in dist/.
// The migrations, and every folder's `sql/` of repeatable definitions (platform/migrator.ts names them in apply order).
import { cpSync, existsSync, readdirSync } from 'node:fs';

const folders = readdirSync('.', { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !['node_modules', 'dist', 'test'].includes(entry.name) && existsSync(`${entry.name}/sql`))
  .map((entry) => `${entry.name}/sql`);
for (const directory of ['migrations', ...folders]) {
  cpSync(directory, `dist/${directory}`, { recursive: true, filter: (source) => !source.includes('.') || source.endsWith('.sql') });
}

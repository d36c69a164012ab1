// Part of `npm run build`: the migrator reads its SQL files relative to its own module, so they go beside the JavaScript in dist/.
import { cpSync } from 'node:fs';

for (const directory of ['migrations', 'sync/sql', 'reads/sql']) {
  cpSync(directory, `dist/${directory}`, { recursive: true, filter: (source) => !source.includes('.') || source.endsWith('.sql') });
}

#!/usr/bin/env node
// The `commerce-sync` command (package.json "bin"). In a clone it runs the
// TypeScript source through tsx, so it is always the code you see; where there
// is no source or no tsx (a production install: `npm run build`, then
// `npm ci --omit=dev`), it runs the built JavaScript in dist/.
import { existsSync } from 'node:fs';

const source = new URL('../client/commerce-sync.ts', import.meta.url);
const built = new URL('../dist/client/commerce-sync.js', import.meta.url);

async function tsxLoader() {
  try {
    return await import('tsx/esm/api');
  } catch {
    return undefined;
  }
}

const tsx = existsSync(source) ? await tsxLoader() : undefined;
if (tsx) {
  tsx.register();
  await import(source.href);
} else if (existsSync(built)) {
  await import(built.href);
} else {
  process.stderr.write(
    'commerce-sync: neither the TypeScript source with tsx nor the built JavaScript is here; run `npm ci`, or `npm run build`\n',
  );
  process.exitCode = 1;
}

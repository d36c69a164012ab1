import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Each source file of the command line and the files of this folder it imports. */
async function importsOf(): Promise<Map<string, string[]>> {
  const files = (await readdir(HERE)).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'));
  const graph = new Map<string, string[]>();
  for (const name of files) {
    const text = await readFile(path.join(HERE, name), 'utf8');
    const targets = [...text.matchAll(/from '\.\/([\w.-]+)\.js'/g)].map((match) => `${match[1]}.ts`);
    graph.set(name, targets);
  }
  return graph;
}

/** Every cycle of imports, each as the files along it. */
function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const walk = (file: string, trail: string[]) => {
    const at = trail.indexOf(file);
    if (at !== -1) {
      if (file === trail[0]) found.push([...trail, file]);
      return;
    }
    for (const next of graph.get(file) ?? []) walk(next, [...trail, file]);
  };
  for (const file of graph.keys()) walk(file, []);
  return found;
}

describe('when the command line imports its own files', () => {
  it('should have no import cycles', async () => {
    expect(cycles(await importsOf())).toEqual([]);
  });
});

import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';

/**
 * The Postgres settings a deployment runs on, as docker-compose.yml ships
 * them (the `-c name=value` arguments of its postgres service): the one place
 * they are written. The bench starts its own server with them, so its figures
 * are those of the recommended deployment, not of whatever server the machine
 * happens to run (this one's has autovacuum off and 128 MB of shared buffers).
 */
export async function shippedPostgresSettings(composeFile: URL = new URL('../docker-compose.yml', import.meta.url)): Promise<string[]> {
  const compose = parse(await readFile(composeFile, 'utf8')) as { services?: { postgres?: { command?: unknown } } } | null;
  const command = compose?.services?.postgres?.command;
  if (!Array.isArray(command)) throw new Error(`${composeFile.pathname}: services.postgres.command is not a list`);
  const settings: string[] = [];
  command.forEach((argument, index) => {
    if (argument !== '-c') return;
    const setting = String(command[index + 1]);
    if (!/^[a-z_.]+=\S+$/.test(setting)) throw new Error(`${composeFile.pathname}: "-c ${setting}" is not name=value`);
    settings.push(setting);
  });
  return settings;
}

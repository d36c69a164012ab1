import { startApi } from '../api/server.js';
import { migrate } from '../platform/migrator.js';
import { startWorker } from '../worker/worker.js';
import { configOrExit, onShutdown } from './run.js';

// One process for local use: migrate, then the API and one worker side by side.
const config = configOrExit();
const starting = (async () => {
  await migrate(config.DATABASE_URL);
  const api = await startApi(config);
  const worker = await startWorker(config);
  return { api, worker };
})();
// Signals are handled from the first moment: Ctrl-C while starting waits for the start, then closes cleanly.
onShutdown(async () => {
  const { api, worker } = await starting;
  await api.close();
  await worker.close();
});
await starting;

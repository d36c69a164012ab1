import { startApi } from '../api/server.js';
import { migrate } from '../shared/migrator.js';
import { startWorker } from '../worker/worker.js';
import { configOrExit, onShutdown } from './run.js';

// One process for local use: migrate, then the API and one worker side by side.
const config = configOrExit();
await migrate(config.DATABASE_URL);
const api = await startApi(config);
const worker = await startWorker(config);
onShutdown(async () => {
  await api.close();
  await worker.close();
});

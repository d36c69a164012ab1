import { startWorker } from '../worker/worker.js';
import { configOrExit, onShutdown } from './run.js';

// Signals are handled from the first moment: a SIGTERM while starting waits for the start, then closes cleanly.
const starting = startWorker(configOrExit());
onShutdown(async () => (await starting).close());
await starting;

import { startWorker } from '../worker/worker.js';
import { configOrExit, onShutdown } from './run.js';

const worker = await startWorker(configOrExit());
onShutdown(() => worker.close());

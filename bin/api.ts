import { startApi } from '../api/server.js';
import { configOrExit, onShutdown } from './run.js';

const api = await startApi(configOrExit());
onShutdown(() => api.close());

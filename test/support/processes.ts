import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import net from 'node:net';
import type { Config } from '../../platform/config.js';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A Redis of the test's own, keeping nothing on disk: a restart comes back empty. */
export async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (up) return child;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server did not start on port ${port}`);
}

export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    signalProcess(child, signal);
  });
}

/**
 * Runs a TypeScript entry point as ONE node process (tsx as a loader), so the
 * child's pid is the real process: a SIGKILL kills it, /proc shows its memory.
 * (`node_modules/.bin/tsx` would be a wrapper with the real process as its child.)
 */
export function spawnEntryPoint(script: string, env: Record<string, string>, stdio: SpawnOptions['stdio'] = 'ignore'): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', script], { env: { ...process.env, ...env }, stdio });
}

export function signalProcess(child: ChildProcess, signal: NodeJS.Signals): void {
  child.kill(signal);
}

/** The real worker entry point (`bin/worker.ts`) as a separate process. */
export function spawnWorker(config: Config, extraEnv: Record<string, string> = {}): ChildProcess {
  return spawnEntryPoint('bin/worker.ts', {
    DATABASE_URL: config.DATABASE_URL,
    REDIS_URL: config.REDIS_URL,
    QUEUE_PREFIX: config.QUEUE_PREFIX,
    LOG_LEVEL: 'silent',
    WORKER_CONCURRENCY: '2',
    WORKER_METRICS_PORT: '0',
    ...extraEnv,
  });
}

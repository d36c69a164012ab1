import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import type { Config } from '../../shared/config.js';

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
    child.kill(signal);
  });
}

/** The real worker entry point (`bin/worker.ts`) as a separate process. */
export function spawnWorker(config: Config, extraEnv: Record<string, string> = {}): ChildProcess {
  return spawn('node_modules/.bin/tsx', ['bin/worker.ts'], {
    env: {
      ...process.env,
      DATABASE_URL: config.DATABASE_URL,
      REDIS_URL: config.REDIS_URL,
      QUEUE_PREFIX: config.QUEUE_PREFIX,
      LOG_LEVEL: 'silent',
      WORKER_CONCURRENCY: '2',
      WORKER_METRICS_PORT: '0',
      ...extraEnv,
    },
    stdio: 'ignore',
  });
}

import type { ChildProcess } from 'node:child_process';
import type { Config } from '../../platform/config.js';
import { httpRequest } from './harness.js';
import { freePort, spawnEntryPoint } from './processes.js';

export interface ApiProcess {
  child: ChildProcess;
  baseUrl: string;
  /** What the process wrote to stderr (the last 64 KiB), for failure messages. */
  stderr(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/** The real API entry point (`bin/api.ts`) as a separate process, ready when this resolves. */
export async function spawnApi(config: Config, extraEnv: Record<string, string> = {}, script = 'bin/api.ts'): Promise<ApiProcess> {
  const port = await freePort();
  const child = spawnEntryPoint(
    script,
    {
      DATABASE_URL: config.DATABASE_URL,
      REDIS_URL: config.REDIS_URL,
      PORT: String(port),
      HOST: '127.0.0.1',
      QUEUE_PREFIX: config.QUEUE_PREFIX,
      ADMIN_PASSWORD: config.ADMIN_PASSWORD ?? '',
      RATE_LIMIT_ENABLED: String(config.RATE_LIMIT_ENABLED),
      RATE_LIMIT_RPS: String(config.RATE_LIMIT_RPS),
      RATE_LIMIT_BURST: String(config.RATE_LIMIT_BURST),
      AUTH_FAILURE_LIMIT: String(config.AUTH_FAILURE_LIMIT),
      AUTH_ADDRESS_FAILURE_LIMIT: String(config.AUTH_ADDRESS_FAILURE_LIMIT),
      AUTH_FAILURE_WINDOW_S: String(config.AUTH_FAILURE_WINDOW_S),
      TRUST_PROXY_HOPS: String(config.TRUST_PROXY_HOPS),
      BULK_UPLOADS_PER_ACCOUNT: String(config.BULK_UPLOADS_PER_ACCOUNT),
      BULK_IDLE_TIMEOUT_MS: String(config.BULK_IDLE_TIMEOUT_MS),
      BULK_MAX_BYTES: String(config.BULK_MAX_BYTES),
      LOG_LEVEL: 'silent',
      ...extraEnv,
    },
    ['ignore', 'ignore', 'pipe'],
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-65_536);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the API process exited with ${child.exitCode} before it was ready`);
    const ready = await httpRequest(baseUrl, 'GET', '/healthz').then(
      (response) => response.status === 200,
      () => false,
    );
    if (ready) return { child, baseUrl, exited, stderr: () => stderr };
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('the API process did not become ready');
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Resolves with how the process ended, or rejects after `timeoutMs`. */
export function exitWithin(
  child: ChildProcess,
  timeoutMs: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
  const started = Date.now();
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode, ms: 0 });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`process ${child.pid} did not exit within ${timeoutMs} ms`)), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, ms: Date.now() - started });
    });
  });
}

/**
 * The real worker entry point as a separate process (as spawnWorker starts it),
 * resolved once its metrics endpoint answers, i.e. once it has started and takes jobs.
 */
export async function spawnReadyWorker(
  config: Config,
  extraEnv: Record<string, string> = {},
): Promise<{ child: ChildProcess; metricsUrl: string; stderr(): string }> {
  const port = await freePort();
  const child = spawnEntryPoint(
    'bin/worker.ts',
    {
      DATABASE_URL: config.DATABASE_URL,
      REDIS_URL: config.REDIS_URL,
      QUEUE_PREFIX: config.QUEUE_PREFIX,
      LOG_LEVEL: 'warn',
      WORKER_CONCURRENCY: '2',
      WORKER_METRICS_PORT: String(port),
      ...extraEnv,
    },
    // Logs (warn and up) go to stdout; stderr has the shutdown messages of bin/run.ts.
    ['ignore', 'pipe', 'pipe'],
  );
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-65_536);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const metricsUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the worker process exited with ${child.exitCode} before it was ready: ${output}`);
    const ready = await httpRequest(metricsUrl, 'GET', '/metrics').then(
      (response) => response.status === 200,
      () => false,
    );
    if (ready) return { child, metricsUrl, stderr: () => output };
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('the worker process did not become ready');
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

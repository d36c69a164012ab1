import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';

describe('when Postgres and Redis are up', () => {
  let env: TestEnvironment;
  beforeAll(async () => {
    env = await startEnvironment({ worker: false });
  });
  afterAll(() => env.close());

  it('should answer /healthz with 200', async () => {
    const response = await env.request('GET', '/healthz');
    expect(response.status).toBe(200);
  });

  it('should answer /readyz with 200 and both dependencies ok', async () => {
    const response = await env.request('GET', '/readyz');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'ok', postgres: 'ok', redis: 'ok' });
  });

  it('should open both probes without a token', async () => {
    const responses = await Promise.all([env.request('GET', '/healthz'), env.request('GET', '/readyz')]);
    expect(responses.map((response) => response.status)).toEqual([200, 200]);
  });
});

async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A throw-away redis-server of this test's own, without persistence. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
    {
      stdio: 'ignore',
    },
  );
  // Should the test process die before afterAll, take the server with it.
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  child.once('exit', () => process.removeListener('exit', reap));
  const deadline = Date.now() + 5_000;
  while (!(await canConnect(port))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server on port ${port} did not start`);
    await sleep(25);
  }
  return child;
}

async function stopRedis(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

describe('when the Redis the API uses goes away and comes back', () => {
  let port: number;
  let redis: ChildProcess | undefined;
  let env: TestEnvironment;

  const ready = () => env.request('GET', '/readyz');

  beforeAll(async () => {
    port = await freePort();
    redis = await startRedis(port);
    env = await startEnvironment({ worker: false, env: { REDIS_URL: `redis://127.0.0.1:${port}` } });
  });
  afterAll(async () => {
    await stopRedis(redis);
    await env?.close();
  });

  it('should be ready while its Redis runs', async () => {
    const response = await pollUntil(ready, (r) => r.status === 200, { timeoutMs: 5_000, intervalMs: 100 });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'ok', postgres: 'ok', redis: 'ok' });
  });

  it('should answer /readyz 503 with redis unavailable once Redis stops', async () => {
    await stopRedis(redis);
    const response = await pollUntil(ready, (r) => r.status === 503, { timeoutMs: 5_000, intervalMs: 100 });
    expect(response.status).toBe(503);
    expect(response.body).toMatchObject({ postgres: 'ok', redis: 'unavailable' });
    expect(response.body.status).not.toBe('ok');
  });

  it('should stay alive for /healthz while Redis is down', async () => {
    const response = await env.request('GET', '/healthz');
    expect(response.status).toBe(200);
  });

  it('should be ready again once Redis is back on the same port', async () => {
    redis = await startRedis(port);
    const response = await pollUntil(ready, (r) => r.status === 200, { timeoutMs: 10_000, intervalMs: 100 });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'ok', postgres: 'ok', redis: 'ok' });
  });
});

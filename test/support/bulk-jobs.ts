import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import type { TestEnvironment } from './harness.js';

/** Polls a v2 bulk job (shown bare) until it failed, or completed with its effects applied; returns the job. */
export async function waitForBulkJob(env: TestEnvironment, token: string, location: string, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await env.request('GET', location, { token });
    expect(response.status).toBe(200);
    const job = response.body;
    if (job.status === 'failed' || (job.status === 'completed' && job.lines_applied === job.lines)) return job;
    if (Date.now() > deadline) throw new Error(`bulk job did not finish: ${response.text}`);
    await sleep(50);
  }
}

/** Polls a v1 bulk job (wrapped in `bulk_job`) until the worker has gone through its file; returns the job. */
export async function waitForV1BulkJob(env: TestEnvironment, token: string, location: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await env.request('GET', location, { token });
    expect(response.status).toBe(200);
    const job = response.body.bulk_job;
    if (job.status === 'completed' || job.status === 'failed') return job;
    if (Date.now() > deadline) throw new Error(`bulk job did not finish: ${response.text}`);
    await sleep(50);
  }
}

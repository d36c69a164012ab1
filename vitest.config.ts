import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'test/**/*.test.ts',
      '{api,worker,platform,catalogue,sync,records,reads,bulk,feed,webhooks,auth,client,bin,bench}/**/*.test.ts',
    ],
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 30_000,
    // Closing a test's API, workers and database waits for jobs in flight; on a loaded 2-core machine that took over a minute.
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});

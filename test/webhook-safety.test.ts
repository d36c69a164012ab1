import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { openShop } from './support/v2-client.js';

/* Where a webhook may send (interface §23.6), with WEBHOOK_ALLOW_PRIVATE unset, as in production. */

let env: TestEnvironment;

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
});
afterAll(async () => {
  await env.close();
});

describe('when a webhook URL is not https or names an internal address', () => {
  it.each([
    'http://example.com/hook',
    'https://127.0.0.1/hook',
    'https://localhost/hook',
    'https://10.1.2.3/hook',
    'https://192.168.0.10/hook',
    'https://169.254.169.254/latest/meta-data',
    'https://[::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://user:pass@example.com/hook',
  ])('should refuse %s with 400 invalid_parameters url, and store nothing', async (url) => {
    const shop = await openShop(env);
    const response = await shop.request('PUT', '/api/v2/webhooks', { webhook: { id: 'w', url } });
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.invalid_parameters).toEqual(['url']);
    expect((await shop.request('GET', '/api/v2/webhooks')).body.data).toEqual([]);
  });
});

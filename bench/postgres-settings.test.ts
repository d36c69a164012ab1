import { describe, expect, it } from 'vitest';
import { shippedPostgresSettings } from './postgres-settings.js';

describe('when the bench reads the Postgres settings docker-compose.yml ships', () => {
  it('should find the memory, WAL and autovacuum settings of a deployment', async () => {
    const settings = await shippedPostgresSettings();
    const names = settings.map((setting) => setting.split('=')[0]);
    expect(names).toEqual(
      expect.arrayContaining(['shared_buffers', 'max_wal_size', 'checkpoint_timeout', 'wal_compression', 'autovacuum_naptime']),
    );
  });

  it('should keep acknowledged writes crash-safe and autovacuum on', async () => {
    const settings = await shippedPostgresSettings();
    const unsafe = settings.filter((setting) => /^(fsync|synchronous_commit|full_page_writes|autovacuum)=(off|false|0)$/.test(setting));
    expect(unsafe).toEqual([]);
  });
});

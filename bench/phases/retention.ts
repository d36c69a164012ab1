import { createDatabase } from '../../platform/db.js';
import { AUDIT_BLOCK_SIZE, maintainAuditBlocks } from '../../sync/audit-blocks.js';
import type { Bench } from '../context.js';
import { log, sleep } from '../context.js';
import { quantile } from '../figures.js';

/** Single writes in flight at once while the audit log's old block is removed. */
const WRITERS = 8;
/** Writes go on this long before and after the removal, so the removal lands among them. */
const AROUND_MS = 1_000;

/**
 * Retention (sync/audit-blocks.ts) on what the bulk phase wrote: the audit
 * log's next block is opened, the block holding the bulk history is made
 * older than AUDIT_RETENTION_DAYS by moving its dates back, and removing it
 * (detached concurrently and dropped) is timed while single writes go on:
 * their p99 and failures while it ran.
 */
export async function retentionPhase(bench: Bench): Promise<void> {
  const db = await createDatabase(bench.databaseUrl, { maximumPoolSize: 2 });
  try {
    const options = { retentionDays: 90, lockTimeoutMs: 2_000 };
    await bench.psql(`UPDATE audit_partitions SET opened_at = opened_at - interval '2 days'`);
    const opened = await maintainAuditBlocks(db, options);
    // Every block below the one just opened goes (the run also opens the block after it).
    const entries = Number(
      (await bench.psql('SELECT count(*) FROM audit_log WHERE seq < $1', [(opened.opened ?? 0) * AUDIT_BLOCK_SIZE])).rows[0].count,
    );
    log(`retention: opened block ${opened.opened}; removing the older blocks (${entries} entries) while single writes go on`);
    await bench.psql(`UPDATE audit_partitions SET opened_at = opened_at - interval '91 days'`);

    const writes: Array<{ start: number; end: number; ok: boolean }> = [];
    let writing = true;
    const writer = async (index: number) => {
      for (let n = 0; writing; n += 1) {
        const start = performance.now();
        let ok = false;
        try {
          const response = await fetch(`${bench.base}/api/v1/languages/bench/products`, {
            method: 'POST',
            headers: bench.auth,
            body: JSON.stringify({ product: { id: `retention-${process.pid}-${index}-${n}`, name: 'Retention product' } }),
          });
          await response.arrayBuffer();
          ok = response.status === 200;
        } catch {
          ok = false;
        }
        writes.push({ start, end: performance.now(), ok });
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, index) => writer(index));
    await sleep(AROUND_MS);
    const pruneStart = performance.now();
    const run = await maintainAuditBlocks(db, options);
    const pruneEnd = performance.now();
    await sleep(AROUND_MS);
    writing = false;
    await Promise.all(writers);

    const during = writes.filter((write) => write.end >= pruneStart && write.start <= pruneEnd);
    const latencies = (list: typeof writes) => list.map((write) => write.end - write.start);
    bench.record('retention', {
      prune_ms: Math.round(pruneEnd - pruneStart),
      blocks_dropped: run.dropped.length,
      entries_removed: entries,
      writes_during_prune: during.length,
      writes_p99_ms_during_prune: quantile(latencies(during), 0.99),
      writes_failed_during_prune: during.filter((write) => !write.ok).length,
      writes_p99_ms_around_prune: quantile(latencies(writes), 0.99),
      writes_failed_around_prune: writes.filter((write) => !write.ok).length,
    });
  } finally {
    await db.end();
  }
}

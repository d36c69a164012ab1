import { startNewlineUploads } from '../../test/support/newline-uploads.js';
import type { Bench } from '../context.js';
import { log } from '../context.js';

/**
 * A client sending 20 MB bodies of newlines, one after another, must not hold
 * up other requests: a record read alongside, timed (test/bulk-uploads.test.ts
 * checks the behaviour, this measures it).
 */
export async function uploadsPhase(bench: Bench): Promise<void> {
  const { base, auth } = bench;
  const readUrl = `${base}/api/v2/languages/bench/products/upload-reader`;
  await fetch(`${base}/api/v1/languages/bench/products`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ product: { id: 'upload-reader', name: 'read while uploads come in' } }),
  });
  const read = async () => {
    const at = performance.now();
    const response = await fetch(readUrl, { headers: { authorization: auth.authorization } });
    await response.arrayBuffer();
    return response.status === 200 ? performance.now() - at : null;
  };
  for (let index = 0; index < 20; index += 1) await read();
  log(`uploads: ${bench.config.uploadReads} reads while 20 MB bodies of newlines are uploaded`);
  const uploader = startNewlineUploads(`${base}/api/v1/languages/bench/bulk`, bench.token);
  const times: number[] = [];
  let failed = 0;
  try {
    while (times.length + failed < bench.config.uploadReads) {
      const time = await read();
      if (time === null) failed += 1;
      else times.push(time);
    }
  } finally {
    uploader.stop();
  }
  times.sort((x, y) => x - y);
  const uploads = uploader.uploads();
  bench.record('uploads', {
    files: uploads.length,
    files_accepted: uploads.filter((upload) => upload.status === 202).length,
    reads: times.length,
    reads_failed: failed,
    read_p50_ms: Number(times[times.length >> 1]?.toFixed(1)),
    read_p99_ms: Number(times[Math.ceil(times.length * 0.99) - 1]?.toFixed(1)),
    target_read_p99_ms: 250,
  });
}

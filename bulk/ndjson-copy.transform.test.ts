import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LINE_HAS_NUL, LINE_NOT_UTF8, LINE_TOO_LONG, MAX_LINE_BYTES, NdjsonCopyTransform } from './ndjson-copy.transform.js';

/** Feeds `chunks` through the transform; returns its COPY rows (as [line_no, line]) and its line count. */
async function copyRows(chunks: Array<string | Buffer>): Promise<{ rows: Array<[number, string]>; lines: number }> {
  const transform = new NdjsonCopyTransform('job');
  const output: string[] = [];
  transform.on('data', (row: Buffer | string) => output.push(row.toString()));
  await new Promise<void>((resolve, reject) => {
    Readable.from(chunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk) : chunk)))
      .pipe(transform)
      .on('finish', resolve)
      .on('error', reject);
  });
  await new Promise((resolve) => setImmediate(resolve));
  const rows = output
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((row) => {
      const [job, number, line] = row.split('\t');
      expect(job).toBe('job');
      return [Number(number), line!] as [number, string];
    });
  return { rows, lines: transform.lines };
}

describe('when an NDJSON upload is turned into COPY rows', () => {
  it('should number lines as in the file and skip blank ones', async () => {
    const { rows, lines } = await copyRows(['{"a":1}\n\n  \n{"b":2}\r\n{"c":3}']);
    expect(rows).toEqual([
      [1, '{"a":1}'],
      [4, '{"b":2}'],
      [5, '{"c":3}'],
    ]);
    expect(lines).toBe(3);
  });

  it('should join a line split across chunks, even inside a multi-byte character', async () => {
    const text = Buffer.from('{"name":"café"}\n');
    const cut = text.indexOf(0xc3) + 1;
    const { rows } = await copyRows([text.subarray(0, cut), text.subarray(cut)]);
    expect(rows).toEqual([[1, '{"name":"café"}']]);
  });

  it('should escape what COPY text format would read as control characters', async () => {
    const { rows } = await copyRows(['{"a":"tab\there \\\\ back"}\n']);
    expect(rows).toEqual([[1, '{"a":"tab\\there \\\\\\\\ back"}']]);
  });

  it('should mark a line longer than the limit and go on with the next', async () => {
    const long = `{"a":"${'x'.repeat(MAX_LINE_BYTES)}"}`;
    const { rows } = await copyRows([`${long.slice(0, 1000)}`, `${long.slice(1000)}\n{"b":2}\n`]);
    expect(rows).toEqual([
      [1, LINE_TOO_LONG],
      [2, '{"b":2}'],
    ]);
  });

  it('should mark a line holding a NUL character', async () => {
    const { rows } = await copyRows(['{"a":"\u0000"}\n{"b":2}\n']);
    expect(rows).toEqual([
      [1, LINE_HAS_NUL],
      [2, '{"b":2}'],
    ]);
  });

  it('should mark a line that is not valid UTF-8, whole or split across chunks, and keep valid ones', async () => {
    const bad = (id: string) => Buffer.concat([Buffer.from('{"product":{"id":"s'), Buffer.from(id, 'latin1'), Buffer.from('"}}\n')]);
    const good = Buffer.from('{"product":{"id":"café"}}\n');
    const body = Buffer.concat([bad('\xc0\xaf'), good, bad('\xff\xfe'), good]);
    const whole = await copyRows([body]);
    // Cut inside a character of every line, so each line is joined from two chunks.
    const cuts = [10, body.indexOf(0xc3) + 1, body.indexOf(0xff) + 1, body.lastIndexOf(0xc3) + 1];
    const pieces = [0, ...cuts].map((from, index) => body.subarray(from, cuts[index] ?? body.length));
    const split = await copyRows(pieces);
    for (const { rows } of [whole, split]) {
      expect(rows).toEqual([
        [1, LINE_NOT_UTF8],
        [2, '{"product":{"id":"café"}}'],
        [3, LINE_NOT_UTF8],
        [4, '{"product":{"id":"café"}}'],
      ]);
    }
  });
});

describe('when a body holds millions of short or blank lines', () => {
  it('should count them for the numbering of the lines after them, across chunks', async () => {
    const { rows, lines } = await copyRows([Buffer.alloc(100_000, '\n'), '\n \r\n', Buffer.alloc(99_997, '\n'), '{"a":1}\n']);
    expect(rows).toEqual([[200_000, '{"a":1}']]);
    expect(lines).toBe(1);
  });

  it('should let the event loop run other work while it splits them', async () => {
    const transform = new NdjsonCopyTransform('job');
    let ticks = 0;
    const ticker = setInterval(() => {
      ticks += 1;
    }, 1);
    try {
      await new Promise<void>((resolve, reject) => {
        transform.on('data', () => undefined);
        transform.on('end', resolve);
        transform.on('error', reject);
        // One chunk of a million short lines, taken in one call of the transform.
        transform.end(Buffer.from('{}\n'.repeat(1_000_000)));
      });
    } finally {
      clearInterval(ticker);
    }
    // Without yielding, the timer could not fire before the whole chunk was split.
    expect(ticks).toBeGreaterThan(0);
  });
});

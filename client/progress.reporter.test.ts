import { describe, expect, it } from 'vitest';
import { countOf, createExportReporter, createReporter, figures, formatDuration, progressLine } from './progress.reporter.js';

describe('when progress figures are computed', () => {
  it('should give the rate over the recent window and the time left at that rate', () => {
    const samples = [
      { at: 0, applied: 0 },
      { at: 20_000, applied: 1_000 },
      { at: 25_000, applied: 6_000 },
      { at: 30_000, applied: 11_000 },
    ];
    // The last 10 s: 10,000 lines in 10 s.
    expect(figures(samples, 21_000)).toEqual({ rate: 1_000, etaSeconds: 10 });
  });

  it('should have no ETA before anything moved, and none left once everything is applied', () => {
    expect(figures([], 10)).toEqual({ rate: 0, etaSeconds: null });
    expect(figures([{ at: 0, applied: 0 }], 10)).toEqual({ rate: 0, etaSeconds: null });
    expect(figures([{ at: 0, applied: 10 }], 10).etaSeconds).toBe(0);
  });

  it.each([
    [null, '--'],
    [0, '0s'],
    [4.2, '5s'],
    [75, '1m15s'],
    [3_725, '1h02m'],
  ])('should show %s seconds as %s', (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text);
  });
});

describe('when progress is reported without a terminal', () => {
  const job = (applied: number, status = 'running') => ({ status, lines: 2_000, lines_stored: 1_500, lines_applied: applied, failed: 3 });

  it('should print one line per interval, and the last state when it stops', () => {
    let clock = 0;
    const written: string[] = [];
    const stream = { write: (text: string) => written.push(text) } as unknown as NodeJS.WriteStream;
    const reporter = createReporter(stream, { tty: false, intervalMs: 2_000, now: () => clock });
    reporter.update(job(0));
    clock = 1_000;
    reporter.update(job(500));
    clock = 2_500;
    reporter.update(job(1_000));
    clock = 3_000;
    reporter.update(job(2_000, 'completed'));
    reporter.stop();
    expect(written).toEqual([
      `${progressLine(job(0), 0, null, 0)}\n`,
      `${progressLine(job(1_000), 400, 2.5, 2.5)}\n`,
      `${progressLine(job(2_000, 'completed'), 2_000 / 3, 0, 3)}\n`,
    ]);
    expect(written[1]).toBe('[   2.5s] running: 1,000/2,000 lines applied, 1,500 stored, 400 lines/s, ETA 3s, 3 failed\n');
  });
});

describe('when an export reports its progress', () => {
  const capture = () => {
    const written: string[] = [];
    return { written, stream: { write: (text: string) => written.push(text) } as unknown as NodeJS.WriteStream };
  };

  it('should write only the notes without a terminal', () => {
    const { written, stream } = capture();
    const reporter = createExportReporter(stream, { tty: false });
    reporter.add('product', 250);
    reporter.note('product: 250 lines');
    reporter.stop(true);
    expect(written).toEqual(['product: 250 lines\n']);
  });

  it('should redraw one line on a terminal, keep the notes above it, and leave the total', () => {
    let clock = 0;
    const { written, stream } = capture();
    const reporter = createExportReporter(stream, { tty: true, intervalMs: 200, now: () => clock });
    clock = 1_000;
    reporter.add('product', 250);
    clock = 1_100;
    reporter.add('product', 250);
    clock = 2_000;
    reporter.add('product', 1);
    reporter.note('product: 501 lines');
    reporter.stop(true);
    expect(written).toEqual([
      '\r\u001b[Kexporting product: 250 records so far, 250 records/s',
      '\r\u001b[Kexporting product: 501 records so far, 251 records/s',
      '\r\u001b[Kproduct: 501 lines\n',
      '\r\u001b[Kexporting product: 501 records so far, 251 records/s',
      '\r\u001b[Kexported 501 records in 2s (251 records/s)\n',
    ]);
  });

  it.each([
    [0, '0 lines'],
    [1, '1 line'],
    [2, '2 lines'],
    [1_000, '1,000 lines'],
  ])('should count %s as %s', (value, text) => {
    expect(countOf(value, 'line')).toBe(text);
  });
});

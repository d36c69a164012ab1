import cliProgress from 'cli-progress';

/** What a bulk job looks like to the shop while it is followed. */
export interface JobSnapshot {
  status: string;
  lines: number;
  lines_stored: number;
  lines_applied: number;
  failed: number;
}

export interface Sample {
  at: number;
  applied: number;
}

/** How far, how fast and how long still: the rate over the last `windowMs` of samples. */
export function figures(samples: readonly Sample[], total: number, windowMs = 10_000): { rate: number; etaSeconds: number | null } {
  const last = samples[samples.length - 1];
  if (!last) return { rate: 0, etaSeconds: null };
  const first = samples.find((sample) => sample.at >= last.at - windowMs) ?? last;
  const seconds = (last.at - first.at) / 1000;
  const rate = seconds > 0 ? (last.applied - first.applied) / seconds : 0;
  const left = total - last.applied;
  if (left <= 0) return { rate, etaSeconds: 0 };
  return { rate, etaSeconds: rate > 0 ? left / rate : null };
}

const number = new Intl.NumberFormat('en-US');
export const formatCount = (value: number) => number.format(Math.round(value));
/** A count with its noun, singular for one: `1 line`, `2 lines`. */
export const countOf = (value: number, one: string, many = `${one}s`) => `${formatCount(value)} ${Math.round(value) === 1 ? one : many}`;

export function formatDuration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return '--';
  const whole = Math.ceil(seconds);
  if (whole < 60) return `${whole}s`;
  if (whole < 3600) return `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, '0')}s`;
  return `${Math.floor(whole / 3600)}h${String(Math.floor((whole % 3600) / 60)).padStart(2, '0')}m`;
}

/** One progress line for a log (no terminal): the same figures as the bar. */
export function progressLine(job: JobSnapshot, rate: number, etaSeconds: number | null, elapsedSeconds: number): string {
  return (
    `[${elapsedSeconds.toFixed(1).padStart(6)}s] ${job.status}: ${formatCount(job.lines_applied)}/${countOf(job.lines, 'line')} applied, ` +
    `${formatCount(job.lines_stored)} stored, ${formatCount(rate)} lines/s, ETA ${formatDuration(etaSeconds)}, ${formatCount(job.failed)} failed`
  );
}

/** The figures a progress update showed: the final summary repeats them. */
export interface Shown {
  rate: number;
  elapsedSeconds: number;
}

export interface ProgressReporter {
  uploading(sentBytes: number, totalBytes: number): void;
  update(job: JobSnapshot): Shown;
  stop(): void;
}

/**
 * A bar on a terminal (cli-progress), plain lines at most every `intervalMs`
 * otherwise. Progress goes to stderr: stdout is left for results.
 */
export function createReporter(
  stream: NodeJS.WriteStream,
  options: { tty: boolean; intervalMs?: number; now?: () => number },
): ProgressReporter {
  const now = options.now ?? Date.now;
  const started = now();
  const samples: Sample[] = [];
  const record = (job: JobSnapshot) => {
    samples.push({ at: now(), applied: job.lines_applied });
    // Enough for the rate window; older samples are of no use.
    while (samples.length > 1 && samples[0]!.at < now() - 60_000) samples.shift();
    return figures(samples, job.lines);
  };

  if (options.tty) {
    const bar = new cliProgress.SingleBar(
      {
        stream,
        format: '{phase} {bar} {percentage}% | {value}/{total} {unit} | {detail}',
        barCompleteChar: '\u2588',
        barIncompleteChar: '\u2591',
        hideCursor: true,
        clearOnComplete: false,
        stopOnComplete: false,
        formatValue: (value, _options, type) => (type === 'value' || type === 'total' ? formatCount(value) : String(value)),
        etaBuffer: 1,
        fps: 5,
      },
      cliProgress.Presets.shades_classic,
    );
    let phase: 'none' | 'upload' | 'job' = 'none';
    return {
      uploading(sent, total) {
        if (phase === 'none') bar.start(Math.max(total, 1), 0, { phase: 'uploading', unit: 'bytes', detail: '' });
        phase = 'upload';
        bar.update(sent, { detail: `${formatCount(sent / Math.max((now() - started) / 1000, 0.001) / 1024)} KiB/s` });
      },
      update(job) {
        const { rate, etaSeconds } = record(job);
        const unit = job.lines === 1 ? 'line applied' : 'lines applied';
        const detail = `${formatCount(job.lines_stored)} stored | ${formatCount(rate)} lines/s | ETA ${formatDuration(etaSeconds)} | ${formatCount(job.failed)} failed | ${job.status}`;
        if (phase !== 'job') {
          if (phase === 'upload') bar.stop();
          bar.start(Math.max(job.lines, 1), job.lines_applied, { phase: 'applying', unit, detail });
          phase = 'job';
        }
        bar.setTotal(Math.max(job.lines, 1));
        bar.update(job.lines_applied, { detail, unit });
        return { rate, elapsedSeconds: (now() - started) / 1000 };
      },
      stop() {
        if (phase !== 'none') bar.stop();
      },
    };
  }

  const interval = options.intervalMs ?? 2_000;
  let lastPrinted = Number.NEGATIVE_INFINITY;
  let lastUpload = Number.NEGATIVE_INFINITY;
  let pending: string | undefined;
  return {
    uploading(sent, total) {
      if (now() - lastUpload < interval && sent < total) return;
      lastUpload = now();
      stream.write(`[${((now() - started) / 1000).toFixed(1).padStart(6)}s] uploading: ${formatCount(sent)}/${formatCount(total)} bytes\n`);
    },
    update(job) {
      const { rate, etaSeconds } = record(job);
      const elapsedSeconds = (now() - started) / 1000;
      const line = progressLine(job, rate, etaSeconds, elapsedSeconds);
      if (now() - lastPrinted >= interval) {
        stream.write(`${line}\n`);
        lastPrinted = now();
        pending = undefined;
      } else pending = line;
      return { rate, elapsedSeconds };
    },
    stop() {
      // The last state is always shown.
      if (pending) stream.write(`${pending}\n`);
    },
  };
}

export interface ExportReporter {
  /** `count` more records of `kind` are read. */
  add(kind: string, count: number): void;
  /** A line that stays (a kind's summary), above the progress line on a terminal. */
  note(text: string): void;
  /** The last state stays on a terminal: records in all, how long, and the rate; an export that broke off only clears its line. */
  stop(finished: boolean): void;
}

/**
 * Export progress on stderr: on a terminal one line redrawn in place (at most
 * every `intervalMs`) with the records so far and their rate; otherwise only
 * the notes, so that a log gets no progress noise.
 */
export function createExportReporter(
  stream: NodeJS.WriteStream,
  options: { tty: boolean; intervalMs?: number; now?: () => number },
): ExportReporter {
  if (!options.tty)
    return {
      add() {},
      note: (text) => stream.write(`${text}\n`),
      stop() {},
    };
  const now = options.now ?? Date.now;
  const interval = options.intervalMs ?? 200;
  const started = now();
  let records = 0;
  let current = '';
  let drawn = Number.NEGATIVE_INFINITY;
  // Records over the whole time so far: the figure the last line keeps.
  const rate = () => records / Math.max((now() - started) / 1000, 0.001);
  const line = () => `exporting ${current}: ${countOf(records, 'record')} so far, ${formatCount(rate())} records/s`;
  const draw = (text: string) => {
    stream.write(`\r\u001b[K${text}`);
    drawn = now();
  };
  return {
    add(kind, count) {
      records += count;
      current = kind;
      if (now() - drawn >= interval) draw(line());
    },
    note(text) {
      stream.write(`\r\u001b[K${text}\n`);
      if (current) draw(line());
    },
    stop(finished) {
      if (!finished) {
        stream.write('\r\u001b[K');
        return;
      }
      draw(`exported ${countOf(records, 'record')} in ${formatDuration((now() - started) / 1000)} (${formatCount(rate())} records/s)\n`);
    },
  };
}

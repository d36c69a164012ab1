import { isUtf8 } from 'node:buffer';
import { Transform, type TransformCallback } from 'node:stream';
import { copyEscape } from '../platform/copy-in.js';

/** Longest NDJSON line kept as is; a longer one is stored as a marker and reported as that line's error. */
export const MAX_LINE_BYTES = 1024 * 1024;
export const LINE_TOO_LONG = '\u0001line-too-long';
export const LINE_HAS_NUL = '\u0001line-has-nul';
export const LINE_NOT_UTF8 = '\u0001line-not-utf8';

const NEWLINE = 0x0a;

/** How long the splitter works before it lets the event loop serve other requests. */
const SLICE_MS = 2;
/** Blank lines counted at once when a run of them fills this many bytes. */
const BLANK_BLOCK = Buffer.alloc(256, '\n');
/** Lines split between two looks at the clock. */
const LINES_PER_CLOCK_READ = 256;

/**
 * Turns an NDJSON byte stream into `COPY bulk_lines (job_id, line_no, line)`
 * rows, holding at most one line in memory. Lines are numbered as in the file
 * (1-based); blank lines are skipped but keep their number. A line that is
 * not valid UTF-8 is stored as a marker (decoded, each bad byte would become
 * U+FFFD, and two different ids one record), as are lines too long or holding
 * a NUL: each is that line's error when the file is applied.
 *
 * Splitting yields to the event loop every few milliseconds: a body of
 * millions of short (or blank) lines arrives faster than it is split, and a
 * stream hands every buffered chunk to the transform in one go, so without
 * yielding one upload would hold up every other request of the process.
 */
export class NdjsonCopyTransform extends Transform {
  lines = 0;
  private lineNo = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private overflow = false;
  private rows: string[] = [];
  private sliceStart = performance.now();
  /** Whether the chunk being split is valid UTF-8 as a whole: then so is every line within it, unchecked. */
  private chunkIsUtf8 = true;

  constructor(private readonly jobId: string) {
    // Rows leave as strings (a few per chunk of the body), written by the consumer where they go without another copy.
    super({ readableObjectMode: true });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    // One check of the chunk (native, a fraction of a millisecond per mebibyte); lines are checked one by one
    // only in a chunk that fails it, which may be a character cut at its edge.
    this.chunkIsUtf8 = isUtf8(chunk);
    this.split(chunk, 0, callback);
  }

  override _flush(callback: TransformCallback): void {
    if (this.pendingBytes > 0 || this.overflow) this.finishPending();
    this.pushRows();
    callback();
  }

  /** Splits `chunk` from `start`, pausing for the event loop whenever the slice is used up. */
  private split(chunk: Buffer, start: number, callback: TransformCallback): void {
    let from = start;
    for (;;) {
      if (performance.now() - this.sliceStart > SLICE_MS) {
        this.pushRows();
        setImmediate(() => {
          this.sliceStart = performance.now();
          this.split(chunk, from, callback);
        });
        return;
      }
      let index = chunk.indexOf(NEWLINE, from);
      for (let count = 0; index !== -1 && count < LINES_PER_CLOCK_READ; count += 1) {
        this.endLine(chunk, from, index);
        from = index + 1;
        // Blank lines in a row are only counted (one byte each, nothing to store), a block at a time where they fill one.
        while (
          from + BLANK_BLOCK.length <= chunk.length &&
          chunk.compare(BLANK_BLOCK, 0, BLANK_BLOCK.length, from, from + BLANK_BLOCK.length) === 0
        ) {
          this.lineNo += BLANK_BLOCK.length;
          from += BLANK_BLOCK.length;
        }
        while (chunk[from] === NEWLINE) {
          this.lineNo += 1;
          from += 1;
        }
        index = chunk.indexOf(NEWLINE, from);
      }
      if (index === -1) break;
    }
    if (from < chunk.length) this.append(chunk.subarray(from));
    this.pushRows();
    callback();
  }

  /** A line ends at `end` (its newline) in `chunk`; it began at `start`, or in earlier chunks. */
  private endLine(chunk: Buffer, start: number, end: number) {
    if (this.pendingBytes > 0 || this.overflow) {
      this.append(chunk.subarray(start, end));
      this.finishPending();
      return;
    }
    this.lineNo += 1;
    // The common case, the whole line in this chunk: decoded in place, without copies.
    if (end - start > MAX_LINE_BYTES) this.store(LINE_TOO_LONG);
    else if (end > start) {
      const valid = this.chunkIsUtf8 || isUtf8(chunk.subarray(start, end));
      this.store(valid ? chunk.toString('utf8', start, end).trim() : LINE_NOT_UTF8);
    }
  }

  private append(part: Buffer) {
    if (this.overflow) return;
    if (this.pendingBytes + part.length > MAX_LINE_BYTES) {
      this.overflow = true;
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    if (part.length > 0) {
      // Copy: the chunk's memory is reused by the stream after this call.
      this.pending.push(Buffer.from(part));
      this.pendingBytes += part.length;
    }
  }

  /** Ends the line held in `pending` (it began in an earlier chunk). */
  private finishPending() {
    this.lineNo += 1;
    // Decoded whole, so a character split across chunks is read as one.
    let text = LINE_TOO_LONG;
    if (!this.overflow) {
      const line = Buffer.concat(this.pending, this.pendingBytes);
      text = isUtf8(line) ? line.toString('utf8').trim() : LINE_NOT_UTF8;
    }
    this.pending = [];
    this.pendingBytes = 0;
    this.overflow = false;
    this.store(text);
  }

  private store(text: string) {
    if (text === '') return;
    const stored = text.includes('\u0000') ? LINE_HAS_NUL : text;
    this.lines += 1;
    this.rows.push(`${this.jobId}\t${this.lineNo}\t${copyEscape(stored)}\n`);
  }

  /** The rows split so far, as one chunk. */
  private pushRows() {
    if (this.rows.length === 0) return;
    this.push(this.rows.join(''));
    this.rows = [];
  }
}

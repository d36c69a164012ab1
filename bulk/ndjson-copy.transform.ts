import { Transform, type TransformCallback } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/** Longest NDJSON line kept as is; a longer one is stored as a marker and reported as that line's error. */
export const MAX_LINE_BYTES = 1024 * 1024;
export const LINE_TOO_LONG = '\u0001line-too-long';
export const LINE_HAS_NUL = '\u0001line-has-nul';

const NEWLINE = 0x0a;

/** COPY text format: backslash, tab, newline and carriage return are escaped. */
function copyEscape(value: string): string {
  return value.replace(/[\\\t\n\r]/g, (character) =>
    character === '\\' ? '\\\\' : character === '\t' ? '\\t' : character === '\n' ? '\\n' : '\\r',
  );
}

/**
 * Turns an NDJSON byte stream into `COPY bulk_lines (job_id, line_no, line)`
 * rows, holding at most one line in memory. Lines are numbered as in the file
 * (1-based); blank lines are skipped but keep their number.
 */
export class NdjsonCopyTransform extends Transform {
  lines = 0;
  private lineNo = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private overflow = false;

  constructor(private readonly jobId: string) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let start = 0;
    for (let index = chunk.indexOf(NEWLINE, start); index !== -1; index = chunk.indexOf(NEWLINE, start)) {
      this.append(chunk.subarray(start, index));
      this.finishLine();
      start = index + 1;
    }
    if (start < chunk.length) this.append(chunk.subarray(start));
    callback();
  }

  override _flush(callback: TransformCallback): void {
    if (this.pendingBytes > 0 || this.overflow) this.finishLine();
    callback();
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

  private finishLine() {
    this.lineNo += 1;
    const overflow = this.overflow;
    const text = overflow ? LINE_TOO_LONG : new StringDecoder('utf8').end(Buffer.concat(this.pending, this.pendingBytes)).trim();
    this.pending = [];
    this.pendingBytes = 0;
    this.overflow = false;
    if (text === '') return;
    const stored = text.includes('\u0000') ? LINE_HAS_NUL : text;
    this.lines += 1;
    this.push(`${this.jobId}\t${this.lineNo}\t${copyEscape(stored)}\n`);
  }
}

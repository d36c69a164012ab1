import { describe, expect, it } from 'vitest';
import { HttpStatusError } from '../platform/errors.js';
import { contentCodingOf, uploadFailure } from './upload-body.reader.js';

describe('when an upload names its content encoding', () => {
  it.each([
    [undefined, 'identity'],
    ['', 'identity'],
    ['identity', 'identity'],
    ['gzip', 'gzip'],
    [' GZip ', 'gzip'],
    ['x-gzip', 'gzip'],
  ])('should read %j as %s', (header, coding) => {
    expect(contentCodingOf(header)).toBe(coding);
  });

  it.each(['br', 'deflate', 'compress', 'zstd', 'gzip, gzip', 'gzip, br'])('should refuse %s with a 415 naming gzip', (header) => {
    let thrown: unknown;
    try {
      contentCodingOf(header);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(HttpStatusError);
    expect((thrown as HttpStatusError).status).toBe(415);
    expect((thrown as HttpStatusError).message).toContain('Content-Encoding: gzip');
  });
});

describe('when reading an upload fails', () => {
  it('should answer a body that is not gzip as the client mistake it is, closing the connection', () => {
    const zlibError = Object.assign(new Error('incorrect header check'), { code: 'Z_DATA_ERROR' });
    const answer = uploadFailure(zlibError) as HttpStatusError;
    expect(answer.status).toBe(400);
    expect(answer.body()).toEqual({ error: { message: 'The body is not valid gzip data (incorrect header check)' } });
    expect(answer.headers).toEqual({ Connection: 'close' });
  });

  it('should leave any other failure as it is', () => {
    const other = new Error('connection refused');
    expect(uploadFailure(other)).toBe(other);
  });
});

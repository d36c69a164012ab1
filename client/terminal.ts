/** Where a command writes: results to stdout, progress and problems to stderr. */
export interface Terminal {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

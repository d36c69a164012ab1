import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface RunningCommand {
  child: ChildProcess;
  /** Everything it wrote so far, stdout and stderr interleaved as they arrived. */
  output(): string;
  /** Resolves with the output once `pattern` appears in it; rejects when the process exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** A long-running command (a service's start) as an operator runs it, its output kept for the test to read. */
export function startCommand(command: string, args: string[], env: Record<string, string | undefined>, cwd = ROOT): RunningCommand {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    output += chunk.toString('utf8');
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => output,
    async waitFor(pattern, timeoutMs = 90_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(output)) {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`exited (${child.exitCode}) before ${pattern}: ${output}`);
        if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms: ${output}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return output;
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

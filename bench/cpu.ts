/**
 * CPU time and memory of processes, read from /proc: steadier than request
 * rates on a shared machine, because it counts the work done, not how long
 * the machine let it take.
 */
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import pg from 'pg';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** User plus system CPU seconds a process has used so far, or null once it is gone. */
export async function cpuSeconds(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; the fields after it are counted from its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/**
 * Read-like plus write-like system calls a process has made so far (`syscr` +
 * `syscw` in /proc/PID/io), or null once it is gone: socket reads and writes
 * are most of a write's kernel cost on loopback.
 */
export async function syscalls(pid: number): Promise<number | null> {
  try {
    const io = await readFile(`/proc/${pid}/io`, 'utf8');
    return Number(/syscr:\s+(\d+)/.exec(io)?.[1] ?? 0) + Number(/syscw:\s+(\d+)/.exec(io)?.[1] ?? 0);
  } catch {
    return null;
  }
}

export async function rssMiB(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return null;
  }
}

/**
 * Measures, over one phase, the CPU seconds and peak RSS of named processes,
 * and the CPU seconds of every Postgres backend serving one database. Backends
 * come and go with the pools; each is sampled while it lives (every 200 ms),
 * and one that first appears during the phase counts from zero.
 *
 * The server's background processes (WAL writer, checkpointer, background
 * writer, autovacuum) are counted apart: what they do for the phase is work
 * the backends did not do themselves (WAL the WAL writer wrote ahead of a
 * commit), but on a server shared with other databases it is not all the
 * phase's.
 */
/** What a watched phase cost: CPU seconds, peak RSS (MiB) and system calls, by process name. */
export interface PhaseCost {
  cpu: Record<string, number>;
  rss: Record<string, number>;
  syscalls: Record<string, number>;
}

export class CpuWatch {
  private readonly startCpu = new Map<string, number>();
  private readonly lastCpu = new Map<string, number>();
  private readonly peakRss = new Map<string, number>();
  private readonly startCalls = new Map<string, number>();
  private readonly lastCalls = new Map<string, number>();
  private readonly backendStart = new Map<number, number>();
  private readonly backendLast = new Map<number, number>();
  private readonly background = new Set<number>();
  private readonly timer: NodeJS.Timeout;
  private sampling: Promise<void> = Promise.resolve();

  private constructor(
    private readonly processes: Record<string, number | undefined>,
    private readonly database: string | undefined,
    private readonly admin: pg.Client | undefined,
  ) {
    this.timer = setInterval(() => {
      this.sampling = this.sampling.then(() => this.sample(false));
    }, 200);
  }

  /** Starts watching `processes` (name → pid) and, if `databaseUrl` is given, that database's backends. */
  static async start(processes: Record<string, number | undefined>, databaseUrl?: string): Promise<CpuWatch> {
    let admin: pg.Client | undefined;
    let database: string | undefined;
    if (databaseUrl) {
      const url = new URL(databaseUrl);
      database = decodeURIComponent(url.pathname.slice(1));
      url.pathname = '/postgres';
      admin = new pg.Client({ connectionString: url.toString() });
      await admin.connect();
    }
    const watch = new CpuWatch(processes, database, admin);
    await watch.sample(true);
    return watch;
  }

  private async backends(): Promise<Array<{ pid: number; background: boolean }>> {
    if (!this.admin) return [];
    const result = await this.admin.query<{ pid: number; background: boolean }>(
      `SELECT pid, backend_type <> 'client backend' AS background
       FROM pg_stat_activity
       WHERE pid <> pg_backend_pid() AND (datname = $1 AND backend_type = 'client backend' OR backend_type <> 'client backend')`,
      [this.database],
    );
    return result.rows;
  }

  private async sample(first: boolean): Promise<void> {
    for (const [name, pid] of Object.entries(this.processes)) {
      if (pid === undefined) continue;
      const [cpu, rss, calls] = await Promise.all([cpuSeconds(pid), rssMiB(pid), syscalls(pid)]);
      if (cpu !== null) {
        if (first) this.startCpu.set(name, cpu);
        this.lastCpu.set(name, cpu);
      }
      if (calls !== null) {
        if (first) this.startCalls.set(name, calls);
        this.lastCalls.set(name, calls);
      }
      if (rss !== null) this.peakRss.set(name, Math.max(this.peakRss.get(name) ?? 0, rss));
    }
    for (const { pid, background } of await this.backends().catch(() => [])) {
      if (background) this.background.add(pid);
      const cpu = await cpuSeconds(pid);
      if (cpu === null) continue;
      if (!this.backendStart.has(pid)) this.backendStart.set(pid, first ? cpu : 0);
      this.backendLast.set(pid, cpu);
    }
  }

  /**
   * Stops watching; CPU seconds used during the phase per process (`postgres`: the database's backends,
   * `postgres_background`: the server's background processes), peak RSS in MiB, and read and write system calls per
   * named process.
   */
  async stop(): Promise<PhaseCost> {
    clearInterval(this.timer);
    await this.sampling;
    await this.sample(false);
    await this.admin?.end();
    const cpu: Record<string, number> = {};
    for (const [name, start] of this.startCpu) cpu[name] = (this.lastCpu.get(name) ?? start) - start;
    if (this.admin) {
      let postgres = 0;
      let background = 0;
      for (const [pid, start] of this.backendStart) {
        const used = (this.backendLast.get(pid) ?? start) - start;
        if (this.background.has(pid)) background += used;
        else postgres += used;
      }
      cpu['postgres'] = postgres;
      cpu['postgres_background'] = background;
    }
    const rss = Object.fromEntries([...this.peakRss].map(([name, mib]) => [name, Math.round(mib)]));
    const calls = Object.fromEntries([...this.startCalls].map(([name, start]) => [name, (this.lastCalls.get(name) ?? start) - start]));
    return { cpu, rss, syscalls: calls };
  }
}

/** CPU microseconds per unit of work, rounded. */
export const perUnit = (seconds: number | undefined, units: number): number | null =>
  seconds === undefined || units <= 0 ? null : Math.round((seconds * 1e6) / units);

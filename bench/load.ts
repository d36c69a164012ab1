import autocannon from 'autocannon';

export interface LoadResult {
  requests: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  non_2xx: number;
  errors: number;
  /** Latency (ms) at the percentiles of LATENCY_PERCENTILES, keyed as `p50`, `p97_5`. */
  latency: Record<string, number>;
}

/** The points of a latency distribution the bench keeps (autocannon's names). */
export const LATENCY_PERCENTILES = ['p10', 'p25', 'p50', 'p75', 'p90', 'p97_5', 'p99', 'p99_9'] as const;

export interface LoadOptions {
  connections: number;
  duration: number;
  method?: 'GET' | 'POST' | 'PUT';
  /** A body whose `[<id>]` becomes a new record id on every request. */
  body?: string;
  headers?: Record<string, string>;
  /** Requests a second across all connections (a steady writer), instead of as fast as the server answers. */
  rate?: number;
  /** URLs taken in turn, one per request, instead of `url` every time (a cursor walk's pages). */
  paths?: readonly string[];
}

/** HTTP load with autocannon, and an uncounted warm-up of the same load before a measured one. */
export class Loader {
  /**
   * Numbers the ids of the records a load writes, across loads (a warm-up and the run after it write new records
   * alike): autocannon's own idReplacement sends nothing in programmatic use (v8).
   */
  private counter = 0;

  constructor(private readonly warmupS: number) {}

  /** The load for the warm-up's seconds, its figures dropped: run before the CPU watch of a measured load starts. */
  async warmUp(url: string, options: Omit<LoadOptions, 'duration'>): Promise<void> {
    if (this.warmupS > 0) await this.run(url, { ...options, duration: this.warmupS });
  }

  async run(url: string, options: LoadOptions): Promise<LoadResult> {
    const template = options.body;
    const paths = options.paths;
    let next = 0;
    const result = await autocannon({
      url,
      connections: options.connections,
      duration: options.duration,
      method: options.method ?? 'GET',
      headers: options.headers,
      ...(options.rate ? { overallRate: options.rate } : {}),
      ...(paths && paths.length > 0
        ? { requests: [{ setupRequest: (request: Record<string, unknown>) => ({ ...request, path: paths[next++ % paths.length] }) }] }
        : {}),
      ...(template
        ? {
            requests: [
              {
                setupRequest: (request: Record<string, unknown>) => ({
                  ...request,
                  body: template.replace('[<id>]', `bench-${process.pid}-${++this.counter}`),
                }),
              },
            ],
          }
        : {}),
    } as autocannon.Options);
    return {
      requests: result.requests.total - result.non2xx,
      rps: Math.round(result.requests.average),
      p50_ms: result.latency.p50,
      p99_ms: result.latency.p99,
      non_2xx: result.non2xx,
      errors: result.errors,
      latency: Object.fromEntries(
        LATENCY_PERCENTILES.map((name) => [name, (result.latency as unknown as Record<string, number>)[name] ?? 0]),
      ),
    };
  }
}

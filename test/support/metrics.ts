/** One sample of a Prometheus text exposition, e.g. sample(text, 'x_count', { route: '/a' }); undefined when absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const wanted = Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`));
    if (wanted) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

/** One sample of a running worker's metrics (0 when absent). */
export async function workerSample(metricsPort: number, name: string, labels: Record<string, string> = {}): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  return sample(await response.text(), name, labels) ?? 0;
}

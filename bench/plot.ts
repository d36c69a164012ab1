import type { Figure } from './context.js';
import { LATENCY_PERCENTILES } from './load.js';

/** The distributions drawn, each from its `<key>.<percentile>` figures, and its colour. */
const SERIES = [
  ['single writes, service', 'writes.latency_ms', '#1f6feb'],
  ['single writes, floor', 'writes.floor_latency_ms', '#8b949e'],
  ['page 1 while written', 'reads.mixed.page_1.latency_ms', '#d1242f'],
  ['deep page while written', 'reads.mixed.deep_page.latency_ms', '#bf8700'],
  ['sub-listing while written', 'reads.mixed.sub_listing.latency_ms', '#1a7f37'],
  ['cursor walk while written', 'reads.mixed.cursor_walk.latency_ms', '#8250df'],
] as const;

/** The picture's size and the margins around the plot (axis labels left and below, the legend right). */
const BOX = { width: 720, height: 360, left: 56, right: 200, top: 24, bottom: 40 } as const;

/**
 * An SVG of the latency distributions of a run (milliseconds on a log scale
 * against the percentile), service beside floor, so a reader sees the shape
 * of the tail and not only two percentiles. Null when the run measured none.
 */
export function latencySvg(results: Record<string, Figure>): string | null {
  const series = SERIES.map(([label, key, colour]) => ({
    label,
    colour,
    points: LATENCY_PERCENTILES.map((name) => Number(results[`${key}.${name}`])),
  })).filter((one) => one.points.every((value) => Number.isFinite(value)));
  if (series.length === 0) return null;
  const values = series.flatMap((one) => one.points).map((value) => Math.max(value, 0.5));
  const low = Math.floor(Math.log10(Math.min(...values)));
  const high = Math.ceil(Math.log10(Math.max(...values)));
  const plotWidth = BOX.width - BOX.left - BOX.right;
  const plotHeight = BOX.height - BOX.top - BOX.bottom;
  const x = (index: number) => BOX.left + (index / (LATENCY_PERCENTILES.length - 1)) * plotWidth;
  const y = (ms: number) => BOX.top + plotHeight - ((Math.log10(Math.max(ms, 0.5)) - low) / Math.max(high - low, 1)) * plotHeight;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${BOX.width}" height="${BOX.height}" viewBox="0 0 ${BOX.width} ${BOX.height}" font-family="sans-serif" font-size="11">`,
    '<title>Latency of single writes (service and floor) and of v2 pages read while written, by percentile</title>',
    `<rect width="${BOX.width}" height="${BOX.height}" fill="#ffffff"/>`,
  ];
  for (let power = low; power <= high; power++) {
    const at = y(10 ** power);
    parts.push(`<line x1="${BOX.left}" x2="${BOX.left + plotWidth}" y1="${at}" y2="${at}" stroke="#d0d7de"/>`);
    parts.push(`<text x="${BOX.left - 6}" y="${at + 4}" text-anchor="end">${10 ** power} ms</text>`);
  }
  LATENCY_PERCENTILES.forEach((name, index) => {
    parts.push(`<text x="${x(index)}" y="${BOX.height - BOX.bottom + 16}" text-anchor="middle">${name.replace('_', '.')}</text>`);
  });
  parts.push(`<text x="${BOX.left + plotWidth / 2}" y="${BOX.height - 6}" text-anchor="middle">percentile of responses</text>`);
  series.forEach((one, index) => {
    const path = one.points.map((ms, at) => `${at === 0 ? 'M' : 'L'}${x(at).toFixed(1)},${y(ms).toFixed(1)}`).join(' ');
    parts.push(`<path d="${path}" fill="none" stroke="${one.colour}" stroke-width="2"/>`);
    const legend = BOX.top + 8 + index * 18;
    parts.push(
      `<line x1="${BOX.width - BOX.right + 16}" x2="${BOX.width - BOX.right + 36}" y1="${legend}" y2="${legend}" stroke="${one.colour}" stroke-width="2"/>`,
    );
    parts.push(`<text x="${BOX.width - BOX.right + 42}" y="${legend + 4}">${one.label}</text>`);
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

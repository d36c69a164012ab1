/** Small arithmetic on measured figures. */

/** System calls per unit of work, to two decimals. */
export const perCall = (calls: number | undefined, units: number): number | null =>
  calls === undefined || units <= 0 ? null : Math.round((calls * 100) / units) / 100;

export const median = (values: number[]): number | null => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? null : sorted[Math.floor(sorted.length / 2)]!;
};

/** The value at `fraction` (0.5, 0.99) of the sorted values, to one decimal. */
export const quantile = (values: number[], fraction: number): number | null => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? null : Number(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]!.toFixed(1));
};

export const round1 = (value: number | null): number | null => (value === null ? null : Number(value.toFixed(1)));

/* The resumable phases a change's effects are cut into (see change.applier.ts). */

/** Where a phase is: how far into its list, or past which key of the index it walks. */
export interface Cursor {
  offset: number;
  after?: string;
}

/**
 * One phase of a change's effects, resumable: it applies at most `limit`
 * units from `cursor` and says how many it applied, whether the phase is
 * complete and where it got to. Phases over a list (stubs, links, point-at
 * children) walk it by offset; phases over the links a writer already has
 * walk their index by key; phases that remove everything they see
 * (cascades, detached links and references) take the next `limit` left.
 */
export type Phase = (cursor: Cursor, limit: number) => Promise<{ count: number; complete: boolean; after?: string; stop?: boolean }>;

export const ONE = { count: 1, complete: true };

/** A phase over `ids`, a slice at a time. */
export const byOffset =
  (ids: readonly string[], apply: (slice: readonly string[]) => Promise<void>): Phase =>
  async ({ offset }, limit) => {
    const slice = ids.slice(offset, offset + limit);
    if (slice.length > 0) await apply(slice);
    return { count: slice.length, complete: offset + slice.length >= ids.length };
  };

/** A phase that removes what is left, `limit` at a time; `take` returns how many it removed. */
export const draining =
  (take: (limit: number) => Promise<number>): Phase =>
  async (_cursor, limit) => {
    const count = await take(limit);
    return { count, complete: count < limit };
  };

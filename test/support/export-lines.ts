/** The timestamps of a record as read, which its line keeps. */
export const STAMPS = { created_at: '2024-01-01T00:00:00.000Z', updated_at: '2024-01-02T00:00:00.000Z' };

/** A record written as the line `{"<kind>": body}`, with the values no line could carry. */
export const written = (kind: string, body: Record<string, unknown>, dropped: string[] = []) => ({
  line: JSON.stringify({ [kind]: body }),
  dropped,
});

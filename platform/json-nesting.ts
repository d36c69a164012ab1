/**
 * The deepest nesting of arrays and objects that a request body or a bulk
 * line may have. No record needs more than a handful of levels (a v2 line
 * request's body, its custom attributes, one attribute); a few dozen leave
 * room for any of them.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Whether `text` nests arrays and objects more than `maxDepth` levels deep,
 * counted as JSON.parse would read it (brackets inside strings do not count).
 *
 * JSON.parse takes about a second over 400,000 opening brackets (under the
 * 1 MiB body limit) and nothing else can run meanwhile. This scan is linear,
 * a few milliseconds over a mebibyte, and stops at the first bracket too
 * deep, so such a text is refused before it is parsed. Text that is not
 * JSON is left to JSON.parse to refuse: a closing bracket with nothing open
 * is where JSON.parse stops too, so the scan stops there.
 */
export function nestsDeeperThan(text: string, maxDepth = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  const length = text.length;
  for (let index = 0; index < length; index += 1) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) {
      for (index += 1; index < length; index += 1) {
        const inner = text.charCodeAt(index);
        if (inner === BACKSLASH) index += 1;
        else if (inner === QUOTE) break;
      }
    } else if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
      depth += 1;
      if (depth > maxDepth) return true;
    } else if (code === CLOSE_ARRAY || code === CLOSE_OBJECT) {
      depth -= 1;
      if (depth < 0) return false;
    }
  }
  return false;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

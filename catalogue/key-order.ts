/**
 * The order of record keys in Postgres (`COLLATE "C"`, migration 0019): by
 * their UTF-8 bytes, which is code point order. JavaScript's `<` compares
 * UTF-16 code units, which differs only where a character above U+FFFF (a
 * surrogate pair) meets one from U+E000 to U+FFFF; this follows the bytes.
 */
export function compareKeys(x: string, y: string): number {
  if (x === y) return 0;
  const length = Math.min(x.length, y.length);
  for (let i = 0; i < length; i += 1) {
    const a = x.charCodeAt(i);
    const b = y.charCodeAt(i);
    if (a !== b) return codePointRank(a) - codePointRank(b);
  }
  return x.length - y.length;
}

/** Surrogates (U+D800–DFFF, halves of code points above U+FFFF) rank after U+E000–FFFF, as their code points do. */
const codePointRank = (unit: number) => (unit < 0xd800 ? unit : unit < 0xe000 ? unit + 0x2000 : unit - 0x800);

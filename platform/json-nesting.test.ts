import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json-nesting.js';

const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;

describe('when the nesting of a JSON text is measured', () => {
  it.each([
    ['a scalar', '1', false],
    ['an object at the limit', `{"a":${nested(MAX_JSON_DEPTH - 1)}}`, false],
    ['arrays at the limit', nested(MAX_JSON_DEPTH), false],
    ['arrays one level deeper', nested(MAX_JSON_DEPTH + 1), true],
    ['objects one level deeper', `${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}1${'}'.repeat(MAX_JSON_DEPTH + 1)}`, true],
    ['brackets inside a string', `["${'['.repeat(100)}"]`, false],
    ['an escaped quote before brackets inside a string', `["\\"${'{'.repeat(100)}"]`, false],
    ['an escaped backslash that ends a string', `["\\\\",${nested(MAX_JSON_DEPTH)}]`, true],
    ['siblings, each at the limit', `[${nested(MAX_JSON_DEPTH - 1)},${nested(MAX_JSON_DEPTH - 1)}]`, false],
  ])('should tell %s', (_name, text, deeper) => {
    expect(nestsDeeperThan(text)).toBe(deeper);
  });

  it('should tell a text of 400,000 levels', () => {
    expect(nestsDeeperThan(`{"grant_type":${nested(400_000)}}`)).toBe(true);
  });

  it('should stop where JSON.parse stops, at a closing bracket with nothing open', () => {
    expect(nestsDeeperThan(`]${nested(100)}`)).toBe(false);
  });
});

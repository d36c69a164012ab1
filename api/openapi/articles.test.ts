import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../openapi.js';
import { withArticle } from './components.js';

/** "a order", "a unknown": an article before a vowel sound ("a one-key", "a user", "a URL" are right). */
const WRONG_ARTICLE = /\ba (?!one\b|uni|us|ur|uu)[aeiou]\w*/gi;

function texts(node: unknown, out: string[] = []): string[] {
  if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if ((key === 'summary' || key === 'description') && typeof value === 'string') out.push(value);
      else texts(value, out);
    }
  }
  return out;
}

describe('when nouns get their article', () => {
  it.each([
    ['order', 'an order'],
    ['product', 'a product'],
    ['item', 'an item'],
    ['user', 'a user'],
    ['unknown id', 'an unknown id'],
    ['shopping cart', 'a shopping cart'],
  ])('should write %s as %s', (noun, expected) => {
    expect(withArticle(noun)).toBe(expected);
  });

  it('should use the right article in every summary and description of the API description', () => {
    const wrong = texts(buildOpenApiDocument()).flatMap((text) => (text.match(WRONG_ARTICLE) ?? []).map((match) => `${match}: ${text}`));
    expect(wrong).toEqual([]);
  });
});

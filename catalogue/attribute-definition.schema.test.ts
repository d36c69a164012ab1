import { describe, expect, it } from 'vitest';
import { handleOf } from './attribute-definition.schema.js';

describe('when a handle is derived from a name', () => {
  it.each([
    ['Shoe size', 'shoe_size'],
    ['  Shoe -- Size!! ', 'shoe_size'],
    ['Größe', 'gr_e'],
    ['already_snake_42', 'already_snake_42'],
    ['__x__', 'x'],
    ['EU/US size (cm)', 'eu_us_size_cm'],
    ['!!!', ''],
    ['日本', ''],
  ])('should turn %j into %j', (name, handle) => {
    expect(handleOf(name)).toBe(handle);
  });
});

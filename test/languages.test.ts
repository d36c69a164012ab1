import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment, uniqueName } from './support/harness.js';

let env: TestEnvironment;

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
});
afterAll(() => env.close());

const SAVED = 'Language successfully saved';
const DELETED = 'Language successfully deleted';

describe.each(['/api/v1/languages/', '/api/v1/languages'])('when createLanguage is called at %s', (path) => {
  let token: string;
  const post = (body: unknown, as = token) => env.request('POST', path, { token: as, body });

  beforeAll(async () => {
    token = await env.token();
  });

  describe('when the language is new', () => {
    it('should answer 200 with every field, unset ones as null', async () => {
      const response = await post({ language: { id: 'nl', name: 'Dutch', code: 'nl' } });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        language: { id: 'nl', name: 'Dutch', code: 'nl', active: null, url: null },
        message: SAVED,
      });
    });

    it('should store an integer id as the same string record', async () => {
      const created = await post({ language: { id: 12, name: 'Twelve', code: 'tw', url: 'https://twelve.example' } });
      expect(created.status).toBe(200);
      expect(created.body.language.id).toBe('12');

      // Same record: the url set through the integer id survives a merge through "12".
      const updated = await post({ language: { id: '12', name: 'Twelve again', code: 'tw' } });
      expect(updated.status).toBe(200);
      expect(updated.body.language).toEqual({ id: '12', name: 'Twelve again', code: 'tw', active: null, url: 'https://twelve.example' });
    });
  });

  describe('when the language already exists', () => {
    const id = 'merge';
    beforeAll(async () => {
      const response = await post({ language: { id, name: 'Merge', code: 'mg', active: true, url: 'https://merge.example' } });
      expect(response.status).toBe(200);
    });

    it('should keep optional fields the update omits', async () => {
      const response = await post({ language: { id, name: 'Merge 2', code: 'm2' } });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        language: { id, name: 'Merge 2', code: 'm2', active: true, url: 'https://merge.example' },
        message: SAVED,
      });
    });

    it('should clear an optional field sent as null and keep the others', async () => {
      const cleared = await post({ language: { id, name: 'Merge 3', code: 'm3', active: null } });
      expect(cleared.status).toBe(200);
      expect(cleared.body.language).toEqual({ id, name: 'Merge 3', code: 'm3', active: null, url: 'https://merge.example' });

      const urlCleared = await post({ language: { id, name: 'Merge 3', code: 'm3', url: null } });
      expect(urlCleared.status).toBe(200);
      expect(urlCleared.body.language).toEqual({ id, name: 'Merge 3', code: 'm3', active: null, url: null });
    });

    it.each([
      ['name', { id, code: 'mg' }],
      ['code', { id, name: 'Merge' }],
    ])('should still require %s', async (field, language) => {
      const response = await post({ language });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: { message: expect.any(String), missing_parameters: [field] } });
    });
  });

  describe('when the body is invalid', () => {
    const valid = { id: 'v', name: 'Valid', code: 'va' };
    it.each([
      ['an empty object', {}, 'missing_parameters', ['language']],
      ['no language key but another one', { lang: valid }, 'missing_parameters', ['language']],
      ['an extra top-level key', { language: valid, extra: 1 }, 'unknown_parameters', ['extra']],
      ['a missing id', { language: { name: 'Valid', code: 'va' } }, 'missing_parameters', ['id']],
      ['a null name', { language: { ...valid, name: null } }, 'missing_parameters', ['name']],
      ['a missing name and an unknown field', { language: { id: 'v', code: 'va', extra: 1 } }, 'missing_parameters', ['name']],
      ['an unknown field', { language: { ...valid, extra: 1 } }, 'unknown_parameters', ['extra']],
      ['an unknown field and a bad type', { language: { ...valid, active: 'yes', extra: 1 } }, 'unknown_parameters', ['extra']],
      ['active "yes"', { language: { ...valid, active: 'yes' } }, 'invalid_parameters', ['active']],
      ['url "not a url"', { language: { ...valid, url: 'not a url' } }, 'invalid_parameters', ['url']],
      ['id 1.5', { language: { ...valid, id: 1.5 } }, 'invalid_parameters', ['id']],
      ['id ""', { language: { ...valid, id: '' } }, 'invalid_parameters', ['id']],
      ['an id of 256 characters', { language: { ...valid, id: 'i'.repeat(256) } }, 'invalid_parameters', ['id']],
      ['id true', { language: { ...valid, id: true } }, 'invalid_parameters', ['id']],
      ['id an object', { language: { ...valid, id: { nested: 1 } } }, 'invalid_parameters', ['id']],
      ['name a number', { language: { ...valid, name: 7 } }, 'invalid_parameters', ['name']],
    ])('should answer 400 for %s', async (_case, body, errorClass, names) => {
      const response = await post(body);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: { message: expect.any(String), [errorClass]: names } });
    });

    it('should accept an id of exactly 255 characters', async () => {
      const id = 'i'.repeat(255);
      const response = await post({ language: { ...valid, id } });
      expect(response.status).toBe(200);
      expect(response.body.language.id).toBe(id);
    });
  });
});

describe('when deleteLanguage is called', () => {
  let token: string;
  beforeAll(async () => {
    token = await env.token();
  });
  const post = (language: Record<string, unknown>) => env.request('POST', '/api/v1/languages/', { token, body: { language } });
  const remove = (id: string) => env.request('DELETE', `/api/v1/languages/${encodeURIComponent(id)}`, { token });

  it('should answer 200 with the deleted record', async () => {
    expect((await post({ id: 'de', name: 'German', code: 'de', active: false, url: 'https://de.example' })).status).toBe(200);
    const response = await remove('de');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      language: { id: 'de', name: 'German', code: 'de', active: false, url: 'https://de.example' },
      message: DELETED,
    });
  });

  it.each([
    ['a language that never existed', 'xx', false],
    ['a language that was deleted already', 'gone', true],
  ])('should answer 200 with only the id for %s', async (_case, id, createFirst) => {
    if (createFirst) {
      expect((await post({ id, name: 'Gone', code: 'gn' })).status).toBe(200);
      expect((await remove(id)).status).toBe(200);
    }
    const response = await remove(id);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ language: { id }, message: DELETED });
  });

  it('should let the same id be created again at once, without the old fields', async () => {
    expect((await post({ id: 'fr', name: 'French', code: 'fr', active: true, url: 'https://fr.example' })).status).toBe(200);
    expect((await remove('fr')).status).toBe(200);
    const again = await post({ id: 'fr', name: 'Français', code: 'fr' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({
      language: { id: 'fr', name: 'Français', code: 'fr', active: null, url: null },
      message: SAVED,
    });
  });
});

describe('when a v2 list is read around a delete of its language by another API process', () => {
  it('should answer 404 once the language is deleted, and list only the new records once it is created again', async () => {
    const token = await env.token();
    const id = uniqueName('lang');
    const language = (name: string) => env.request('POST', '/api/v1/languages/', { token, body: { language: { id, name, code: 'it' } } });
    const product = (productId: string) =>
      env.request('POST', `/api/v1/languages/${id}/products`, { token, body: { product: { id: productId, name: productId } } });
    const list = () => env.request('GET', `/api/v2/languages/${id}/products`, { token });
    const ids = (response: { body: unknown }) => (response.body as { data: { id: string }[] }).data.map((item) => item.id);
    expect((await language('Italian')).status).toBe(200);
    expect((await product('old')).status).toBe(200);
    // From here this process has the language cached; the list's own statement checks that it is still live.
    expect(ids(await list())).toEqual(['old']);
    // Deleted as another API process would (this process's cache is not told).
    await env.db.query(sql.unsafe`UPDATE languages SET deleted_at = now() WHERE id = ${id} AND deleted_at IS NULL`);
    expect((await list()).status).toBe(404);
    expect((await language('Italiano')).status).toBe(200);
    expect((await product('new')).status).toBe(200);
    const again = await list();
    expect(again.status).toBe(200);
    expect(ids(again)).toEqual(['new']);
  });
});

describe('when two accounts use the same language id', () => {
  it('should keep their languages apart', async () => {
    const [tokenA, tokenB] = await Promise.all([env.token(), env.token()]);
    const post = (as: string, language: Record<string, unknown>) =>
      env.request('POST', '/api/v1/languages/', { token: as, body: { language } });

    const a = await post(tokenA, { id: 'same', name: 'A', code: 'aa', url: 'https://a.example' });
    const b = await post(tokenB, { id: 'same', name: 'B', code: 'bb', active: true });
    expect(a.body.language).toEqual({ id: 'same', name: 'A', code: 'aa', active: null, url: 'https://a.example' });
    expect(b.body.language).toEqual({ id: 'same', name: 'B', code: 'bb', active: true, url: null });

    // Each account's merge sees only its own stored values.
    const a2 = await post(tokenA, { id: 'same', name: 'A2', code: 'aa' });
    const b2 = await post(tokenB, { id: 'same', name: 'B2', code: 'bb' });
    expect(a2.body.language).toEqual({ id: 'same', name: 'A2', code: 'aa', active: null, url: 'https://a.example' });
    expect(b2.body.language).toEqual({ id: 'same', name: 'B2', code: 'bb', active: true, url: null });

    // Deleting A's language returns A's record and leaves B's in place.
    const deleted = await env.request('DELETE', '/api/v1/languages/same', { token: tokenA });
    expect(deleted.body).toEqual({
      language: { id: 'same', name: 'A2', code: 'aa', active: null, url: 'https://a.example' },
      message: DELETED,
    });
    const b3 = await post(tokenB, { id: 'same', name: 'B3', code: 'bb' });
    expect(b3.body.language).toEqual({ id: 'same', name: 'B3', code: 'bb', active: true, url: null });
  });
});

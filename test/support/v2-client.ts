import { type HttpResponse, type TestEnvironment, uniqueName } from './harness.js';

export type KindName = 'brand' | 'category' | 'product' | 'variant' | 'review' | 'profile' | 'order' | 'shopping_cart';

export const SEGMENT: Record<KindName, string> = {
  brand: 'brands',
  category: 'categories',
  product: 'products',
  variant: 'variants',
  review: 'reviews',
  profile: 'profiles',
  order: 'orders',
  shopping_cart: 'shopping_carts',
};

/** A client of one account with one language of its own, talking v1 and v2 over HTTP. */
export interface Shop {
  token: string;
  account: string;
  lang: string;
  /** Any request with this shop's token. */
  request(method: string, path: string, body?: unknown): Promise<HttpResponse>;
  /** GET /api/v2/languages/{lang}{path}. */
  get(path: string): Promise<HttpResponse>;
  /** PUT /api/v2/languages/{lang}/{products|categories} with `{kind: record}`. */
  put(kind: 'product' | 'category', record: Record<string, unknown>): Promise<HttpResponse>;
  /** DELETE /api/v2/languages/{lang}{path}. */
  del(path: string): Promise<HttpResponse>;
  /** POST /api/v1/languages/{lang}/{segment} with `{kind: record}`; throws unless 200. */
  v1(kind: KindName, record: Record<string, unknown>): Promise<HttpResponse>;
  /** DELETE /api/v1/languages/{lang}/{segment}/{id}. */
  v1Delete(kind: KindName, id: string): Promise<HttpResponse>;
  /** A v2 write that must succeed. */
  save(kind: 'product' | 'category', record: Record<string, unknown>): Promise<Record<string, any>>;
  /** Every page of a v2 list (by `per_page`), concatenated. */
  all(path: string, perPage?: number): Promise<Array<Record<string, any>>>;
}

/** A fresh account, token and language (`lang`, or a unique id). */
export async function openShop(env: TestEnvironment, lang = uniqueName('lang')): Promise<Shop> {
  const client = await env.newClient();
  const tokenResponse = await env.request('POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
  });
  if (tokenResponse.status !== 200) throw new Error(`token: ${tokenResponse.status} ${tokenResponse.text}`);
  const token = tokenResponse.body.access_token as string;
  const request = (method: string, path: string, body?: unknown) => env.request(method, path, { token, body });
  const created = await request('POST', '/api/v1/languages', { language: { id: lang, name: lang, code: 'xx' } });
  if (created.status !== 200) throw new Error(`language: ${created.status} ${created.text}`);
  const base = `/api/v2/languages/${encodeURIComponent(lang)}`;
  const shop: Shop = {
    token,
    account: client.account,
    lang,
    request,
    get: (path) => request('GET', `${base}${path}`),
    put: (kind, record) => request('PUT', `${base}/${SEGMENT[kind]}`, { [kind]: record }),
    del: (path) => request('DELETE', `${base}${path}`),
    async v1(kind, record) {
      const response = await request('POST', `/api/v1/languages/${encodeURIComponent(lang)}/${SEGMENT[kind]}`, { [kind]: record });
      if (response.status !== 200) throw new Error(`v1 ${kind}: ${response.status} ${response.text}`);
      return response;
    },
    v1Delete: (kind, id) => request('DELETE', `/api/v1/languages/${encodeURIComponent(lang)}/${SEGMENT[kind]}/${encodeURIComponent(id)}`),
    async save(kind, record) {
      const response = await shop.put(kind, record);
      if (response.status !== 200) throw new Error(`v2 ${kind}: ${response.status} ${response.text}`);
      return response.body;
    },
    async all(path, perPage = 250) {
      const items: Array<Record<string, any>> = [];
      const separator = path.includes('?') ? '&' : '?';
      for (let page = 1; ; page += 1) {
        const response = await shop.get(`${path}${separator}page=${page}&per_page=${perPage}`);
        if (response.status !== 200) throw new Error(`list ${path}: ${response.status} ${response.text}`);
        items.push(...response.body.data);
        if (response.body.data.length < perPage) return items;
      }
    },
  };
  return shop;
}

/** `2024-01-01T00:00:{n}.000Z`-style instants: distinct, ordered, exact to the millisecond. */
export const at = (seconds: number) => new Date(Date.UTC(2024, 0, 1) + seconds * 1000).toISOString();

export const ids = (items: Array<Record<string, any>>) => items.map((item) => item['id'] as string);

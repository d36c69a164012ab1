/**
 * A reference model of interface §4-6 and §8 for the record kinds
 * (v1 writes and deletes, v2 PUTs and assignments): each request applied
 * alone, with all its effects, in order. The model-based tests compare the
 * service's drained state and audit log with it.
 */
/** The kinds the random requests write and delete. */
export type RecordKind = 'brand' | 'category' | 'product' | 'variant' | 'review' | 'profile' | 'order' | 'shopping_cart';
/** Every stored kind: the record kinds and the v2-only ones. */
export type Kind = RecordKind | 'global_unsubscribe' | 'purchase_event';
export type Fields = Record<string, unknown>;

export interface AuditFact {
  kind: string;
  id: string;
  action: string;
}

export class Model {
  readonly records = new Map<Kind, Map<string, Fields>>();
  readonly links = { product_category: new Set<string>(), relevant: new Set<string>() };
  readonly audit: AuditFact[] = [];

  constructor() {
    for (const kind of [
      'brand',
      'category',
      'product',
      'variant',
      'review',
      'profile',
      'order',
      'shopping_cart',
      'global_unsubscribe',
      'purchase_event',
    ] as Kind[]) {
      this.records.set(kind, new Map());
    }
  }

  table(kind: Kind): Map<string, Fields> {
    return this.records.get(kind)!;
  }

  exists(kind: Kind, id: string): boolean {
    return this.table(kind).has(id);
  }

  private log(kind: string, id: string, action: string) {
    this.audit.push({ kind, id, action });
  }

  private ensureStub(kind: Kind, id: string, fields: Fields = {}): boolean {
    if (this.exists(kind, id)) return false;
    this.table(kind).set(id, { ...fields });
    this.log(kind, id, 'stub');
    return true;
  }

  private replace(rel: 'product_category' | 'relevant', side: 'a' | 'b', writerKind: Kind, writer: string, ids: string[]) {
    const set = this.links[rel];
    const wanted = new Set(ids);
    for (const link of [...set].sort()) {
      const [a, b] = link.split('|') as [string, string];
      const mine = side === 'a' ? a : b;
      const other = side === 'a' ? b : a;
      if (mine === writer && !wanted.has(other)) {
        set.delete(link);
        this.log(writerKind, writer, 'unlink');
      }
    }
    for (const other of wanted) {
      const link = side === 'a' ? `${writer}|${other}` : `${other}|${writer}`;
      if (!set.has(link)) {
        set.add(link);
        this.log(writerKind, writer, 'link');
      }
    }
  }

  private pointAt(kind: Kind, id: string, field: string, parent: string) {
    if (this.ensureStub(kind, id, { [field]: parent })) return;
    const record = this.table(kind).get(id)!;
    if (record[field] === parent) return;
    record[field] = parent;
    this.log(kind, id, 'link');
  }

  /**
   * A successful write of `input` (ids already strings): a v1 POST, or a v2
   * PUT (which sends no list fields; its brand_id is the product's own
   * reference, like a variant's product_id).
   */
  write(kind: Kind, input: Fields): void {
    const id = input['id'] as string;
    const { id: _id, ...sent } = input;
    const lists: Record<string, string[]> = {};
    const fields: Fields = {};
    const listFields: Record<Kind, string[]> = {
      brand: ['product_ids'],
      category: ['product_ids'],
      product: ['variant_ids', 'relevant_product_ids', 'review_ids', 'category_ids'],
      variant: [],
      review: [],
      profile: [],
      order: [],
      shopping_cart: [],
      global_unsubscribe: [],
      purchase_event: [],
    };
    for (const [name, value] of Object.entries(sent)) {
      if (listFields[kind].includes(name)) lists[name] = [...new Set((value as string[] | null) ?? [])];
      else fields[name] = value;
    }
    const table = this.table(kind);
    const existed = table.has(id);
    table.set(id, existed ? { ...table.get(id)!, ...fields } : fields);
    this.log(kind, id, existed ? 'update' : 'create');

    const stub = (target: Kind, value: unknown) => {
      if (typeof value === 'string') this.ensureStub(target, value);
    };
    switch (kind) {
      case 'product':
        stub('brand', fields['brand_id']);
        break;
      case 'category':
        stub('category', fields['parent_category_id']);
        break;
      case 'variant':
        stub('product', fields['product_id']);
        break;
      case 'review':
        stub('product', fields['product_id']);
        stub('profile', fields['profile_id']);
        break;
      case 'order':
        stub('profile', fields['profile_id']);
        for (const product of new Set(((fields['products'] as Array<{ id: string }>) ?? []).map((item) => item.id)))
          stub('product', product);
        break;
      case 'shopping_cart':
        stub('profile', fields['profile_id']);
        for (const product of new Set((fields['product_ids'] as string[]) ?? [])) stub('product', product);
        break;
      default:
        break;
    }
    if (kind === 'brand' && lists['product_ids'])
      for (const product of lists['product_ids']) this.pointAt('product', product, 'brand_id', id);
    if (kind === 'category' && lists['product_ids']) {
      for (const product of lists['product_ids']) this.ensureStub('product', product);
      this.replace('product_category', 'b', 'category', id, lists['product_ids']);
    }
    if (kind === 'product') {
      for (const variant of lists['variant_ids'] ?? []) this.pointAt('variant', variant, 'product_id', id);
      if (lists['relevant_product_ids']) {
        for (const product of lists['relevant_product_ids']) this.ensureStub('product', product);
        this.replace('relevant', 'a', 'product', id, lists['relevant_product_ids']);
      }
      for (const review of lists['review_ids'] ?? []) this.pointAt('review', review, 'product_id', id);
      if (lists['category_ids']) {
        for (const category of lists['category_ids']) this.ensureStub('category', category);
        this.replace('product_category', 'a', 'product', id, lists['category_ids']);
      }
    }
  }

  /**
   * A v2 global unsubscribe (interface §16): the entry (id: the email in
   * lower case) and, on every profile with that email, `unsubscribed`.
   */
  unsubscribe(email: string, unsubscribed: boolean): void {
    const id = email.toLowerCase();
    const table = this.table('global_unsubscribe');
    this.log('global_unsubscribe', id, table.has(id) ? 'update' : 'create');
    table.set(id, { unsubscribed });
    for (const [profile, fields] of [...this.table('profile')].sort()) {
      if (typeof fields['email'] === 'string' && fields['email'].toLowerCase() === id) {
        fields['unsubscribed'] = unsubscribed;
        this.log('profile', profile, 'update');
      }
    }
  }

  /**
   * A v2 line write acknowledged with 200/204 (interface §15): an order line
   * or a cart product added (or updated) or removed; an update of the parent
   * that stubs the added product. A removal of an absent line writes nothing.
   */
  line(parent: 'order' | 'shopping_cart', id: string, product: string, remove: boolean, sent: Fields = {}): void {
    const record = this.table(parent).get(id);
    if (!record) return;
    if (parent === 'shopping_cart') {
      const ids = (record['product_ids'] as string[] | undefined) ?? [];
      if (remove) {
        if (!ids.includes(product)) return;
        record['product_ids'] = ids.filter((item) => item !== product);
      } else if (!ids.includes(product)) record['product_ids'] = [...ids, product];
    } else {
      const lines = (record['products'] as Fields[] | undefined) ?? [];
      const first = lines.findIndex((item) => item['id'] === product);
      if (remove) {
        if (first === -1) return;
        record['products'] = lines.filter((item) => item['id'] !== product);
      } else {
        const old = first === -1 ? undefined : lines[first]!;
        const line: Fields = {
          id: product,
          quantity: sent['quantity'] !== undefined ? sent['quantity'] : old ? (old['quantity'] ?? null) : 1,
          variant_id: sent['variant_id'] !== undefined ? sent['variant_id'] : (old?.['variant_id'] ?? null),
        };
        record['products'] =
          first === -1
            ? [...lines, line]
            : lines.flatMap((item, index) => (index === first ? [line] : item['id'] === product ? [] : [item]));
      }
    }
    this.log(parent, id, 'update');
    if (!remove) this.ensureStub('product', product);
  }

  /** A v2 related-product link or unlink acknowledged with 204, like an assignment. */
  relate(product: string, other: string, present: boolean): void {
    const link = `${product}|${other}`;
    const set = this.links.relevant;
    if (present) {
      if (!this.exists('product', product) || !this.exists('product', other) || set.has(link)) return;
      set.add(link);
      this.log('product', product, 'link');
    } else if (set.delete(link)) {
      this.log('product', product, 'unlink');
    }
  }

  /**
   * A v2 assignment acknowledged with 204: the link appears only if both
   * records exist at this point (audited 'link' on the product, nothing when
   * already linked); an unassignment removes a present link ('unlink').
   */
  assign(product: string, category: string, present: boolean): void {
    const link = `${product}|${category}`;
    const set = this.links.product_category;
    if (present) {
      if (!this.exists('product', product) || !this.exists('category', category) || set.has(link)) return;
      set.add(link);
      this.log('product', product, 'link');
    } else if (set.delete(link)) {
      this.log('product', product, 'unlink');
    }
  }

  /** A delete acknowledged with 200. Deleting what the serial order says is already gone changes nothing. */
  delete(kind: Kind, id: string): void {
    if (!this.exists(kind, id)) return;
    this.table(kind).delete(id);
    this.log(kind, id, 'delete');
    if (kind === 'product') {
      for (const [variant, fields] of [...this.table('variant')].sort()) {
        if (fields['product_id'] === id) {
          this.table('variant').delete(variant);
          this.log('variant', variant, 'cascade_delete');
        }
      }
      for (const link of [...this.links.product_category]) {
        if (link.split('|')[0] === id) {
          this.links.product_category.delete(link);
          this.log('product', id, 'unlink');
        }
      }
      for (const link of [...this.links.relevant]) {
        const [a, b] = link.split('|');
        if (a === id || b === id) {
          this.links.relevant.delete(link);
          this.log('product', a!, 'unlink');
        }
      }
    }
    if (kind === 'category') {
      for (const link of [...this.links.product_category]) {
        if (link.split('|')[1] === id) {
          this.links.product_category.delete(link);
          this.log('category', id, 'unlink');
        }
      }
      for (const [child, fields] of this.table('category')) {
        if (fields['parent_category_id'] === id) {
          fields['parent_category_id'] = null;
          this.log('category', child, 'unlink');
        }
      }
    }
    if (kind === 'brand') {
      for (const [product, fields] of this.table('product')) {
        if (fields['brand_id'] === id) {
          fields['brand_id'] = null;
          this.log('product', product, 'unlink');
        }
      }
    }
  }
}

/** Drops null and undefined values so that "unset" and "cleared" compare equal. */
export function normalise(fields: Fields): Fields {
  const out: Fields = {};
  for (const key of Object.keys(fields).sort()) {
    const value = fields[key];
    if (value !== null && value !== undefined) out[key] = value;
  }
  return out;
}

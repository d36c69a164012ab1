-- Records of all nine kinds (languages have their own table), relation links,
-- the transactional outbox and the audit log. See docs/consistency.md.

-- One global write sequence: every accepted change takes its number after it
-- holds the locks it needs, so conflicting writes are numbered in commit order.
CREATE SEQUENCE write_seq AS bigint;

-- The API writes `data`, `stamps`, `live` synchronously (read-your-writes);
-- the worker keeps `w_live` and `w_ref`, the serial view as of the outbox entry
-- it is applying, and reconciles the API view through the per-field stamps.
CREATE TABLE records (
  lang_key     bigint NOT NULL REFERENCES languages (lang_key),
  kind         text NOT NULL,
  id           text NOT NULL,
  data         jsonb NOT NULL DEFAULT '{}',
  stamps       jsonb NOT NULL DEFAULT '{}',
  live         boolean NOT NULL,
  created_seq  bigint NOT NULL,
  write_seq    bigint NOT NULL,
  deleted_seq  bigint NOT NULL DEFAULT 0,
  created_at   timestamptz,
  updated_at   timestamptz,
  w_live       boolean NOT NULL DEFAULT false,
  w_ref        text,
  PRIMARY KEY (lang_key, kind, id)
);

CREATE INDEX records_list ON records (lang_key, kind, created_at, id) WHERE live;
CREATE INDEX records_list_updated ON records (lang_key, kind, updated_at, id) WHERE live;
CREATE INDEX records_w_ref ON records (lang_key, kind, w_ref) WHERE w_live AND w_ref IS NOT NULL;
CREATE INDEX records_product_ref ON records (lang_key, kind, (data ->> 'product_id')) WHERE live AND kind IN ('variant', 'review');
CREATE INDEX records_brand_ref ON records (lang_key, (data ->> 'brand_id')) WHERE live AND kind = 'product';
CREATE INDEX records_profile_email ON records (lang_key, lower(data ->> 'email')) WHERE live AND kind = 'profile';

-- Many-to-many relations, written only by the worker, in write order.
-- rel 'product_category': a = product, b = category.
-- rel 'relevant':         a = product, b = the related product.
CREATE TABLE links (
  lang_key bigint NOT NULL REFERENCES languages (lang_key),
  rel      text NOT NULL,
  a        text NOT NULL,
  b        text NOT NULL,
  seq      bigint NOT NULL,
  linked_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (lang_key, rel, a, b)
);

CREATE INDEX links_reverse ON links (lang_key, rel, b, a);

-- One row per accepted change whose effects are not applied yet.
CREATE TABLE outbox (
  seq         bigint PRIMARY KEY,
  lang_key    bigint NOT NULL,
  account_id  bigint NOT NULL,
  language_id text NOT NULL,
  kind        text NOT NULL,
  action      text NOT NULL,
  record_id   text NOT NULL,
  payload     jsonb NOT NULL,
  actor       text NOT NULL,
  request_id  text,
  accepted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  attempts    integer NOT NULL DEFAULT 0,
  failed_at   timestamptz,
  last_error  text
);

CREATE INDEX outbox_language ON outbox (lang_key, seq);

CREATE TABLE audit_log (
  seq         bigserial PRIMARY KEY,
  at          timestamptz NOT NULL DEFAULT clock_timestamp(),
  account_id  bigint NOT NULL,
  lang_key    bigint NOT NULL,
  language_id text NOT NULL,
  kind        text NOT NULL,
  record_id   text NOT NULL,
  action      text NOT NULL,
  actor       text NOT NULL,
  request_id  text,
  write_seq   bigint NOT NULL,
  changes     jsonb NOT NULL DEFAULT '{}'
);

CREATE INDEX audit_log_record ON audit_log (kind, record_id, seq);
CREATE INDEX audit_log_language ON audit_log (language_id, seq);

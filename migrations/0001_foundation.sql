-- Accounts, OAuth clients and tokens, and languages.

CREATE TABLE accounts (
  id         bigserial PRIMARY KEY,
  name       text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- client_secret is never stored: only its SHA-256 (secrets are 256-bit random
-- values, so a slow password hash would add latency without adding safety).
CREATE TABLE clients (
  id          bigserial PRIMARY KEY,
  account_id  bigint NOT NULL REFERENCES accounts (id),
  client_id   text NOT NULL UNIQUE,
  secret_hash bytea NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);

CREATE INDEX clients_account ON clients (account_id);

CREATE TABLE access_tokens (
  token_hash bytea PRIMARY KEY,
  client_pk  bigint NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
  issued_at  timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);

CREATE INDEX access_tokens_expiry ON access_tokens (expires_at);
CREATE INDEX access_tokens_client ON access_tokens (client_pk);

-- lang_key is the surrogate every record hangs from: deleting a language and
-- creating the same id again yields a new lang_key, so the new language starts
-- empty while the old one's records are purged in the background.
CREATE TABLE languages (
  lang_key   bigserial PRIMARY KEY,
  account_id bigint NOT NULL REFERENCES accounts (id),
  id         text NOT NULL,
  name       text NOT NULL,
  code       text NOT NULL,
  active     boolean,
  url        text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz,
  purged_at  timestamptz
);

CREATE UNIQUE INDEX languages_live_id ON languages (account_id, id) WHERE deleted_at IS NULL;
CREATE INDEX languages_pending_purge ON languages (lang_key) WHERE deleted_at IS NOT NULL AND purged_at IS NULL;

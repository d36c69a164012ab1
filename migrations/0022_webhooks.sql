-- Webhooks of an account (interface §23). The secret is kept as it was given
-- out: it signs every delivery (a hash could not). previous_secret signs
-- beside it until previous_secret_until, after a rotation.
CREATE TABLE webhooks (
  account_id            bigint NOT NULL REFERENCES accounts (id),
  id                    text NOT NULL,
  url                   text NOT NULL,
  languages             text[],
  kinds                 text[],
  events                text[] NOT NULL,
  active                boolean NOT NULL,
  failing_since         timestamptz,
  disabled_reason       text,
  secret                text NOT NULL,
  previous_secret       text,
  previous_secret_until timestamptz,
  created_at            timestamptz NOT NULL,
  updated_at            timestamptz NOT NULL,
  PRIMARY KEY (account_id, id)
);

-- Where a webhook's deliveries of a language stand: every entry at or below
-- after_seq is in a delivery already. Postgres holds it, so a Redis that lost
-- its jobs loses no entry. leased_until: the one worker delivering the pair
-- now (one delivery in flight per webhook and language).
CREATE TABLE webhook_positions (
  account_id   bigint NOT NULL,
  webhook_id   text NOT NULL,
  lang_key     bigint NOT NULL REFERENCES languages (lang_key),
  after_seq    bigint NOT NULL,
  leased_until timestamptz,
  lease_token  uuid,
  PRIMARY KEY (account_id, webhook_id, lang_key),
  FOREIGN KEY (account_id, webhook_id) REFERENCES webhooks (account_id, id) ON DELETE CASCADE
);

-- Each delivery as sent (the same body and webhook-id on every attempt).
CREATE TABLE webhook_deliveries (
  id               uuid PRIMARY KEY,
  account_id       bigint NOT NULL,
  webhook_id       text NOT NULL,
  lang_key         bigint NOT NULL,
  language_id      text NOT NULL,
  type             text NOT NULL,
  entries          integer NOT NULL,
  first_seq        bigint,
  bulk_job_id      uuid,
  last_seq         bigint,
  body             text NOT NULL,
  status           text NOT NULL DEFAULT 'pending',
  attempts         integer NOT NULL DEFAULT 0,
  last_status_code integer,
  last_error       text,
  next_attempt_at  timestamptz NOT NULL,
  delivered_at     timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (account_id, webhook_id) REFERENCES webhooks (account_id, id) ON DELETE CASCADE
);

CREATE INDEX webhook_deliveries_undelivered ON webhook_deliveries (account_id, webhook_id, lang_key, created_at)
  WHERE status <> 'delivered';
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (account_id, webhook_id, created_at DESC);
-- A bulk job's end is announced once per webhook.
CREATE UNIQUE INDEX webhook_deliveries_bulk_job ON webhook_deliveries (account_id, webhook_id, bulk_job_id)
  WHERE bulk_job_id IS NOT NULL;

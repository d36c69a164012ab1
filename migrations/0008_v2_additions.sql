-- supersedes: 0008_v2_surface.sql sha256:53cffe5cb19a6cfdf24bd0f0233ad79864a436044adee3b61cc197e89e5d161d
-- The rest of v2 (docs/interface.md §13-21): languages written with only an id, custom
-- attribute definitions per account, and the serial view of profile emails
-- that global unsubscribes read.

-- A v2 language PUT may send only the id; name and code are null until set.
ALTER TABLE languages ALTER COLUMN name DROP NOT NULL, ALTER COLUMN code DROP NOT NULL;

-- Attribute definitions describe custom attributes; they never reject a write.
-- One per (account, resource, handle); listed by first creation.
CREATE TABLE custom_attribute_definitions (
  account_id  bigint NOT NULL REFERENCES accounts (id),
  resource    text NOT NULL,
  handle      text NOT NULL,
  name        text NOT NULL,
  description text NOT NULL,
  datatype    text NOT NULL,
  created_seq bigserial NOT NULL,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (account_id, resource, handle)
);

CREATE INDEX custom_attribute_definitions_list ON custom_attribute_definitions (account_id, created_seq);

-- A profile's tracked reference (w_ref) is now its email in lower case: a
-- global unsubscribe finds the profiles that have the email at its point of
-- the serial order. Profiles written before this kept none; on a drained
-- database (migrations run with the service stopped) the API view is the serial one.
UPDATE records SET w_ref = lower(data ->> 'email')
WHERE kind = 'profile' AND w_live AND data ->> 'email' IS NOT NULL;

-- Erasures of a customer (interface §24). The email is kept only while the
-- erasure runs (the applier and the scrub need it) and cleared when it
-- completes; email_sha256 stays.
CREATE TABLE erasures (
  id              uuid PRIMARY KEY,
  account_id      bigint NOT NULL REFERENCES accounts (id),
  email           text,
  profile_id      text,
  email_sha256    text,
  status          text NOT NULL CHECK (status IN ('queued', 'running', 'completed')),
  profiles_erased bigint NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL DEFAULT now(),
  finished_at     timestamptz
);
CREATE INDEX erasures_list ON erasures (account_id, created_at, id);
CREATE INDEX erasures_unfinished ON erasures (created_at) WHERE status <> 'completed';

-- One row per language the erasure reaches: its ordered change (write_seq), and
-- what applying it found (the erased profiles, and the email a profile_id
-- erasure learned from its profile), which the scrub works from.
CREATE TABLE erasure_languages (
  erasure_id   uuid NOT NULL REFERENCES erasures (id) ON DELETE CASCADE,
  lang_key     bigint NOT NULL REFERENCES languages (lang_key),
  language_id  text NOT NULL,
  write_seq    bigint NOT NULL,
  applied      boolean NOT NULL DEFAULT false,
  email        text,
  profile_ids  text[] NOT NULL DEFAULT '{}',
  PRIMARY KEY (erasure_id, lang_key)
);

-- An audit entry's changes (or a queued change's payload) with an erased
-- person's data taken out: everything of an erased profile or of the email's
-- global unsubscribe; in the records that name an erased profile
-- (`dependents`, 'kind:id'), their personal fields (`personal`, 'kind:field');
-- anywhere, a field whose value holds the email.
CREATE FUNCTION erasure_scrub_changes(
  p_kind text, p_record_id text, p_changes jsonb, p_email text, p_profiles text[], p_dependents text[], p_personal text[]
) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN p_kind = 'profile' AND p_record_id = ANY (p_profiles) THEN '{}'::jsonb
    WHEN p_kind = 'global_unsubscribe' AND p_record_id = p_email THEN '{}'::jsonb
    WHEN jsonb_typeof(p_changes) <> 'object' THEN p_changes
    ELSE (
      SELECT coalesce(jsonb_object_agg(f.key, f.value), '{}'::jsonb) FROM jsonb_each(p_changes) f
      WHERE NOT ((p_kind || ':' || f.key) = ANY (p_personal) AND (p_kind || ':' || p_record_id) = ANY (p_dependents))
        AND NOT (p_email IS NOT NULL AND strpos(lower(f.value::text), p_email) > 0)
    )
  END
$$;

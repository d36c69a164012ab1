-- supersedes: 0015_account_limits.sql sha256:95fc01dd120a32db8a2289fc61f550ee4dbf1431410981ead000ae6fbb6542ee
-- A shop's own request limit, set with `cli set-limit`: requests per
-- second and the burst allowance per minute. NULL is the deployment's default
-- (RATE_LIMIT_RPS, RATE_LIMIT_BURST); the two are set and cleared together.
-- Read with the bearer token's owner, so the limit costs no query of its own.
ALTER TABLE accounts
  ADD COLUMN rate_limit_rps integer CHECK (rate_limit_rps > 0),
  ADD COLUMN rate_limit_burst integer CHECK (rate_limit_burst >= 0),
  ADD CONSTRAINT accounts_rate_limit_both CHECK ((rate_limit_rps IS NULL) = (rate_limit_burst IS NULL));

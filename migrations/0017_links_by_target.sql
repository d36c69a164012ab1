-- The links of a target (a category's products, a product's relevant-for
-- products) are found through an index that starts with the target, not with
-- (lang_key, rel).
--
-- With (lang_key, rel, b, a), both indexes of links started with the same two
-- columns. For a language the statistics do not know yet (a new one, or any in
-- a database autovacuum has not analysed), Postgres estimates one row for
-- (lang_key, rel), costs both indexes the same for `a = $1`, and took this one:
-- each lookup of a product's links then read every link of the language
-- (9 ms per applier batch after 20,000 single writes, growing with the
-- catalogue). Led by b, this index cannot serve a lookup by a except by reading
-- all of it, which no estimate makes look cheap.
CREATE INDEX links_by_target ON links (b, lang_key, rel, a);
DROP INDEX links_reverse;

-- Only products that name a brand need an entry in the brand lookup: a bulk
-- file of brandless products no longer pays an index insert per line.
-- (data ->> 'brand_id') = $1 implies IS NOT NULL, so the lookups still use it.
DROP INDEX records_brand_ref;
CREATE INDEX records_brand_ref ON records (lang_key, (data ->> 'brand_id'))
  WHERE live AND kind = 'product' AND (data ->> 'brand_id') IS NOT NULL;

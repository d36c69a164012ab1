        -- The merge of a write into the record's stored row, shared by
        -- write_record and write_records (each declares `created_given`: the
        -- write named its created_at). A live row takes the new fields over its
        -- own; a deleted one is replaced whole; a write lands only over a
        -- lower-numbered one.
        ON CONFLICT (lang_key, kind, id) DO UPDATE SET
          data = CASE WHEN r.live THEN r.data || excluded.data ELSE excluded.data END,
          stamps = CASE WHEN r.live THEN r.stamps || excluded.stamps ELSE excluded.stamps END,
          live = true,
          created_seq = CASE WHEN r.live THEN r.created_seq ELSE excluded.created_seq END,
          write_seq = excluded.write_seq,
          created_at = CASE
            WHEN created_given OR NOT r.live THEN excluded.created_at
            ELSE r.created_at
          END,
          updated_at = excluded.updated_at
        WHERE r.write_seq < excluded.write_seq

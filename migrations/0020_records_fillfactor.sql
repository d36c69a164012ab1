-- The applier marks each record it applies (w_live, w_ref) soon after the write stored it: with half of
-- each new page free, the mark of every row of a page written together fits beside it (a HOT update, no
-- index entries) instead of a third of them.
ALTER TABLE records SET (fillfactor = 50);

import { deleteExpiredTokens } from '../../auth/token.repository.js';
import type { Processor } from './processor.js';

export const purgeExpiredTokensProcessor: Processor<'purge-expired-tokens'> = async (_job, { db }) => {
  let deleted = 0;
  for (;;) {
    const count = await deleteExpiredTokens(db, 5_000);
    deleted += count;
    if (count < 5_000) return { deleted };
  }
};

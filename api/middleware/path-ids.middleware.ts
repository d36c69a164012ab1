import type Router from '@koa/router';
import { MAX_ID_LENGTH } from '../../catalogue/primitives.schema.js';
import { ValidationError } from '../../platform/errors.js';
import type { AppState } from '../context.js';

/**
 * Refuses an id in the path (every `:..._id` of the router's routes) longer
 * than any id can be: 400 `invalid_parameters` naming the parameter, after
 * the token is checked and before the route looks anything up. Such an id
 * names nothing that could exist, so it is the client's mistake, not a 404;
 * the message does not repeat it (it may be kilobytes long).
 * Call it once the router's routes are defined.
 */
export function refuseLongPathIds(router: Router<AppState>): void {
  const names = new Set(router.stack.flatMap((layer) => layer.paramNames.map((key) => String(key.name))));
  for (const name of [...names].filter((each) => each.endsWith('_id'))) {
    router.param(name, (value, _ctx, next) => {
      if (value.length > MAX_ID_LENGTH) {
        throw new ValidationError('invalid_parameters', [name], `Invalid parameters: ${name} (at most ${MAX_ID_LENGTH} characters)`);
      }
      return next();
    });
  }
}

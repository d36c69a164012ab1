import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// Adds `.openapi()` to every zod schema, once per process (the call is idempotent).
// Modules that attach OpenAPI metadata import `z` from here so the extension is in place first.
extendZodWithOpenApi(z);

export { z };

/**
 * The floor for single writes: a bare node:http + pg server doing the same
 * single-record upsert as createProduct, with no validation, auth or queue.
 */
import http from 'node:http';
import pg from 'pg';

const port = Number(process.argv[2] ?? 0);
const databaseUrl = process.argv[3]!;
const pool = new pg.Pool({ connectionString: databaseUrl, max: 20 });

const server = http.createServer((request, response) => {
  if (request.method === 'GET') {
    response.end('ok');
    return;
  }
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { product: { id: string; name: string; category_ids: string[] } };
    const { id, ...fields } = body.product;
    pool
      .query(
        `INSERT INTO floor_records AS r (lang_key, kind, id, data, live, created_seq, write_seq, created_at, updated_at)
         VALUES (1, 'product', $1, $2, true, 0, 0, now(), now())
         ON CONFLICT (lang_key, kind, id) DO UPDATE SET data = r.data || excluded.data, updated_at = excluded.updated_at
         RETURNING id, data, created_at, updated_at`,
        [String(id), fields],
      )
      .then((result) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ product: result.rows[0], message: 'Product successfully saved' }));
      })
      .catch((error: Error) => {
        response.writeHead(500);
        response.end(error.message);
      });
  });
});
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${typeof address === 'object' && address ? address.port : port}\n`);
});
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));

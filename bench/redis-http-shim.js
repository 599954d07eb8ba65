// A server of the Upstash REST protocol forwarding to a redis-server, for
// redis-http.js (the same protocol as test/integration/redis/helpers/rest-server.ts):
// POST / one command (JSON array) -> {"result"} or {"error"}; POST /pipeline
// an array of commands -> an array of those. Bearer token `bench`.
//   node redis-http-shim.js <redis port>     prints {"port":N} when listening
import { createServer } from 'node:http';
import { Redis } from 'ioredis';

const redis = new Redis({ host: '127.0.0.1', port: Number(process.argv[2]) });
const run = async (c) => {
  try {
    return { result: await redis.call(...c.map(String)) };
  } catch (e) {
    return { error: e.message };
  }
};
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    if (req.headers.authorization !== 'Bearer bench') {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"Unauthorized"}');
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (req.url === '/pipeline') {
      const out = await Promise.all(body.map(run));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    } else {
      const out = await run(body);
      res.writeHead(out.error === undefined ? 200 : 400, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));

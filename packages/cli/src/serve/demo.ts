import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RuntimeRoute } from 'ratecontract/config';

function send(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': type, 'content-length': String(Buffer.byteLength(text)) });
  res.end(text);
}

function field(body: unknown, name: string): string | undefined {
  const v = body !== null && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
  return typeof v === 'string' ? v : undefined;
}

/**
 * The demo API's handlers, behind the guard: they answer what the built-in
 * contract's routes stand for, without doing it (no SMS is sent, no password
 * checked). Any other route answers 404.
 */
export function demoHandler(req: IncomingMessage, res: ServerResponse, route: RuntimeRoute | undefined, body: unknown): void {
  // A body nobody read is drained, so the connection can be kept alive.
  if (!req.readableEnded) req.resume();
  switch (route?.config.match) {
    case 'POST /otp/send':
      send(res, 202, { sent: true, to: field(body, 'phone') ?? null, note: 'demo: no SMS is sent' });
      return;
    case 'POST /login':
      send(res, 200, { user: field(body, 'username') ?? null, note: 'demo: every password is accepted' });
      return;
    case 'GET /search': {
      // The query alone: a target such as `//:/../search` (which routes as /search) is no URL to parse.
      const target = (req.url ?? '').split('#')[0] ?? '';
      const at = target.indexOf('?');
      const q = new URLSearchParams(at < 0 ? '' : target.slice(at + 1)).get('q') ?? '';
      send(res, 200, { q, results: [] });
      return;
    }
    case 'GET /health':
      send(res, 200, { status: 'ok' });
      return;
    default:
      // A route of a user's contract served without --upstream: say which route matched.
      if (route !== undefined) {
        send(res, 200, { route: route.config.match, note: 'no --upstream: the demo answers every configured route' });
        return;
      }
      send(res, 404, { type: 'about:blank', title: 'Not Found', status: 404, detail: 'the demo API has POST /otp/send, POST /login, GET /search and GET /health' }, 'application/problem+json');
  }
}

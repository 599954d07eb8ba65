import { ConfigFileError, type RateContractConfig, type RoutePattern } from 'ratecontract/config';
import { compareSpecificity } from 'ratecontract/internal';

/** The proxies `--emit` writes a config for. */
export const EMIT_TARGETS = ['nginx', 'caddy', 'haproxy', 'haproxy-lua'] as const;
export type EmitTarget = (typeof EMIT_TARGETS)[number];

/** What `--emit` needs besides the contract: where decide, the proxy and the application listen. */
export interface EmitOptions {
  /** Where decide listens (`host:port`). */
  readonly decide: string;
  /** The application the proxy passes allowed requests to (`host:port`). */
  readonly upstream: string;
  /** Where the proxy itself listens (`host:port`). */
  readonly listen: string;
  /** The command line that wrote the config, for its first comment. */
  readonly command: string;
}

/** What a route gets at the proxy when decide cannot be reached. */
export type Unreachable = 'pass' | 'deny';

/** One route as the proxy sees it: its pattern, its fail mode at the proxy, and the comments that say why. */
export interface ProxyRoute {
  readonly pattern: RoutePattern;
  readonly unreachable: Unreachable;
  /** One line per limit: name, purpose, fail mode, reason. */
  readonly notes: readonly string[];
}

/** The `Retry-After` of the 503 a route that fails closed gets while decide is unreachable, seconds. */
export const UNREACHABLE_RETRY_AFTER_S = 1;

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * Each route of the contract, most specific first (the first pattern that
 * matches a request is its route, as in `RouteTable`), with its fail mode at
 * the proxy when decide is unreachable: `deny` (503) when any of its limits
 * would refuse without its store (`onError: closed`, the default for abuse;
 * or an abuse limit's `degraded`, whose local fallback state lives in decide,
 * not in the proxy), else `pass` (shedding limits, `open` limits, `limits: []`).
 */
export function proxyRoutes(config: RateContractConfig): ProxyRoute[] {
  const byName = new Map(config.compiled.map((l) => [l.name, l]));
  const routes = config.routes.map((r) => {
    const limits = r.limits.flatMap((n) => {
      const l = byName.get(n);
      return l === undefined ? [] : [l];
    });
    const deny = limits.some((l) => l.onError === 'closed' || (l.onError === 'degraded' && l.purpose === 'abuse'));
    const notes = limits.length === 0 ? ['limits: [] (not limited)'] : limits.map((l) => `${l.name}: ${l.purpose}, onError ${l.onError}${l.reason === undefined ? '' : `: ${oneLine(l.reason)}`}`);
    const unreachable: Unreachable = deny ? 'deny' : 'pass';
    return { pattern: r.pattern, unreachable, notes };
  });
  // Most specific first; on equal paths an exact method before GET (which also matches HEAD), before *.
  const methodOrder = (m: string): number => (m === '*' ? 2 : m === 'GET' ? 1 : 0);
  return routes.sort((a, b) => compareSpecificity(a.pattern, b.pattern, '') || methodOrder(a.pattern.method) - methodOrder(b.pattern.method));
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, (c) => (c === '/' ? '/' : `\\${c}`));
}

/** The path of a pattern as a regular expression on a normalised path (PCRE, RE2 and Go alike). */
export function pathRegex(p: RoutePattern): string {
  let re = '^';
  let wildcard = false;
  for (const s of p.segments) {
    if (s.kind === 'literal') re += `/${escapeRegex(s.value)}`;
    else if (s.kind === 'param') re += '/[^/]+';
    else wildcard = true;
  }
  if (wildcard) return `${re}(/.*)?$`;
  return re === '^' ? '^/$' : `${re}/?$`;
}

/** The methods of a pattern as a regular expression (`GET` also matches `HEAD`, as the route table does). */
export function methodRegex(p: RoutePattern): string {
  return p.method === '*' ? '[^ ]+' : p.method === 'GET' ? '(GET|HEAD)' : escapeRegex(p.method);
}

function hostPort(hp: string): { host: string; port: string } {
  const i = hp.lastIndexOf(':');
  return { host: hp.slice(0, i), port: hp.slice(i + 1) };
}

function routeComments(r: ProxyRoute, indent: string): string[] {
  const what = r.unreachable === 'deny' ? `503 while decide is unreachable (fails closed)` : 'passes while decide is unreachable';
  return [`${indent}# ${r.pattern.source}: ${what}`, ...r.notes.map((n) => `${indent}#   ${n}`)];
}

const PROBLEM_429 = '{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Quota Exceeded","status":429,"detail":"Too many requests: see Retry-After."}';
const PROBLEM_503 = '{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"try again after Retry-After"}';
const PROBLEM_403 = '{"type":"about:blank","title":"Forbidden","status":403}';
const PROBLEM_UNREACHABLE = '{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"the rate limiter cannot be reached and this route fails closed"}';

/**
 * An nginx `http {}` fragment (include it from nginx.conf): a server on
 * `listen` that asks decide with `auth_request` before proxying each
 * request, passes the `RateLimit` fields on, rebuilds decide's 429 or 503
 * from its `--deny-status 403` answer, and gives each route its fail mode
 * when decide is unreachable (nginx turns the failed subrequest into a 500,
 * which `error_page` sends to the fallback).
 */
export function emitNginx(config: RateContractConfig, o: EmitOptions): string {
  const routes = proxyRoutes(config);
  const lines = [
    `# Generated from ${config.file} by: ${o.command}`,
    '# Run decide with --deny-status 403: nginx passes only 401 and 403 from auth_request (any other status becomes a 500).',
    '# Include this file in the http {} block of nginx.conf.',
    '',
    'upstream ratecontract_decide {',
    `    server ${o.decide};`,
    '    keepalive 32;',
    '}',
    '',
    'upstream ratecontract_app {',
    `    server ${o.upstream};`,
    '    keepalive 32;',
    '}',
    '',
    '# When decide cannot be reached, each route gets its limits\' fail mode: pass, or deny (503).',
    '# The first pattern that matches is the route (most specific first, as in the contract).',
    'map "$request_method $uri" $ratecontract_unreachable {',
    '    default pass;  # no route: not limited',
  ];
  for (const r of routes) {
    lines.push(...routeComments(r, '    '));
    lines.push(`    "~^${methodRegex(r.pattern)} ${pathRegex(r.pattern).slice(1)}" ${r.unreachable};`);
  }
  lines.push(
    '}',
    '',
    'server {',
    `    listen ${o.listen};`,
    '',
    '    proxy_http_version 1.1;',
    '    proxy_set_header Connection "";',
    '    proxy_set_header Host $host;',
    '    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;',
    '',
    '    location / {',
    '        auth_request /_ratecontract_decide;',
    '        auth_request_set $ratecontract_status $upstream_http_ratecontract_status;',
    '        auth_request_set $ratecontract_retry_after $upstream_http_retry_after;',
    '        auth_request_set $ratecontract_ratelimit $upstream_http_ratelimit;',
    '        auth_request_set $ratecontract_policy $upstream_http_ratelimit_policy;',
    '        # Allowed: the RateLimit fields decide told this caller (an empty value adds nothing).',
    '        add_header RateLimit $ratecontract_ratelimit always;',
    '        add_header RateLimit-Policy $ratecontract_policy always;',
    '        error_page 403 = @ratecontract_denied;',
    '        error_page 500 = @ratecontract_unreachable;',
    '        proxy_pass http://ratecontract_app;',
    '    }',
    '',
    '    # The subrequest: no body, the original method and target, the client address.',
    '    location = /_ratecontract_decide {',
    '        internal;',
    '        proxy_pass http://ratecontract_decide;',
    '        proxy_http_version 1.1;',
    '        proxy_set_header Connection "";',
    '        proxy_pass_request_body off;',
    '        proxy_set_header Content-Length "";',
    '        proxy_set_header X-Original-Method $request_method;',
    '        proxy_set_header X-Original-URI $request_uri;',
    '        # Clear the other family: a client could send it (decide refuses a subrequest whose two families disagree).',
    '        proxy_set_header X-Forwarded-Method "";',
    '        proxy_set_header X-Forwarded-Uri "";',
    '        # nginx at the edge: the peer is the client. Behind another proxy, use $proxy_add_x_forwarded_for.',
    '        proxy_set_header X-Forwarded-For $remote_addr;',
    '        proxy_set_header X-Real-IP $remote_addr;',
    '        proxy_connect_timeout 1s;',
    '        proxy_read_timeout 5s;',
    '    }',
    '',
    "    # A denial: decide's own status (RateContract-Status), its exact Retry-After and RateLimit fields.",
    '    location @ratecontract_denied {',
    '        default_type application/problem+json;',
    '        add_header Retry-After $ratecontract_retry_after always;',
    '        add_header RateLimit $ratecontract_ratelimit always;',
    '        add_header RateLimit-Policy $ratecontract_policy always;',
    '        add_header Cache-Control no-store always;',
    "        if ($ratecontract_status = 503) { return 503 '" + PROBLEM_503 + "'; }",
    "        if ($ratecontract_status = 403) { return 403 '" + PROBLEM_403 + "'; }",
    "        return 429 '" + PROBLEM_429 + "';",
    '    }',
    '',
    '    # decide unreachable (or answering what nginx cannot read): the route\'s fail mode.',
    '    location @ratecontract_unreachable {',
    '        default_type application/problem+json;',
    '        if ($ratecontract_unreachable = deny) {',
    `            add_header Retry-After ${UNREACHABLE_RETRY_AFTER_S} always;`,
    '            add_header Cache-Control no-store always;',
    "            return 503 '" + PROBLEM_UNREACHABLE + "';",
    '        }',
    '        proxy_pass http://ratecontract_app;',
    '    }',
    '}',
    '',
  );
  return lines.join('\n');
}

/**
 * A Caddyfile: a site on `listen` that asks decide with `forward_auth`
 * (a denial is copied to the client as decide sent it: status, Retry-After,
 * RateLimit fields, problem+json), copies the allowed answer's `RateLimit`
 * fields onto the client's answer, and gives each route its fail mode when
 * decide is unreachable (`handle_errors`).
 */
export function emitCaddy(config: RateContractConfig, o: EmitOptions): string {
  const routes = proxyRoutes(config);
  const { port } = hostPort(o.listen);
  const { host } = hostPort(o.listen);
  const lines = [
    `# Generated from ${config.file} by: ${o.command}`,
    '# Run decide without --deny-status: Caddy passes its 429 or 503 to the client as is.',
    '{',
    '    admin off',
    '    auto_https off',
    '}',
    '',
    `http://${host}:${port} {`,
    `    bind ${host}`,
    `    forward_auth ${o.decide} {`,
    '        uri /_ratecontract_decide',
    '        copy_headers RateLimit RateLimit-Policy',
    '    }',
    "    # Allowed: the RateLimit fields decide told this caller (copied onto the request above), onto the upstream's answer.",
    `    reverse_proxy ${o.upstream} {`,
    '        header_down RateLimit {http.request.header.RateLimit}',
    '        header_down RateLimit-Policy {http.request.header.RateLimit-Policy}',
    '    }',
    '',
    "    # decide unreachable: each route gets its limits' fail mode (first match, most specific first).",
    '    handle_errors {',
    '        route {',
  ];
  routes.forEach((r, i) => {
    lines.push(...routeComments(r, '            '));
    const method = r.pattern.method === '*' ? '' : ` method ${r.pattern.method === 'GET' ? 'GET HEAD' : r.pattern.method}`;
    lines.push(`            @route${i} {`);
    if (method !== '') lines.push(`               ${method}`);
    lines.push(`                path_regexp ${pathRegex(r.pattern)}`, '            }');
    if (r.unreachable === 'deny') {
      lines.push(
        `            header @route${i} Retry-After ${UNREACHABLE_RETRY_AFTER_S}`,
        `            header @route${i} Content-Type application/problem+json`,
        `            respond @route${i} \`${PROBLEM_UNREACHABLE}\` 503`,
      );
    } else lines.push(`            reverse_proxy @route${i} ${o.upstream}`);
  });
  lines.push('            # no route: not limited', `            reverse_proxy ${o.upstream}`, '        }', '    }', '}', '');
  // Caddy's own format (caddy fmt) indents with tabs.
  return lines.map((l) => l.replace(/^(?: {4})+/, (s) => '\t'.repeat(s.length / 4))).join('\n');
}

/**
 * An HAProxy 2.6 configuration and its Lua action: `http-request
 * lua.ratecontract_decide` asks decide with HAProxy's own HTTP client, and
 * `http-request return` rebuilds a denial with its status, Retry-After and
 * RateLimit fields; each route's fail mode is set with `set-var` rules, least
 * specific first, so the most specific route's rule is the last to apply.
 * The Lua action is `--emit haproxy-lua` (`emitHaproxyLua`).
 */
export function emitHaproxy(config: RateContractConfig, o: EmitOptions): string {
  const routes = proxyRoutes(config);
  const cfg = [
    `# Generated from ${config.file} by: ${o.command}`,
    '# Run decide without --deny-status. ratecontract.lua is written by --emit haproxy-lua.',
    'global',
    '    lua-load ratecontract.lua',
    '',
    'defaults',
    '    mode http',
    '    timeout connect 1s',
    '    timeout client 30s',
    '    timeout server 30s',
    '',
    'frontend ratecontract',
    `    bind ${o.listen}`,
    '    http-request lua.ratecontract_decide',
    "    # decide unreachable: each route's fail mode (least specific first: the most specific route's rule applies last).",
    '    http-request set-var(txn.rc_unreachable) str(pass)',
  ];
  [...routes].reverse().forEach((r) => {
    cfg.push(...routeComments(r, '    '));
    const m = r.pattern.method === '*' ? '' : ` { method ${r.pattern.method === 'GET' ? 'GET HEAD' : r.pattern.method} }`;
    cfg.push(`    http-request set-var(txn.rc_unreachable) str(${r.unreachable}) if${m} { path_reg ${pathRegex(r.pattern)} }`);
  });
  const fields = 'hdr Retry-After %[var(txn.rc_retry_after)] hdr RateLimit %[var(txn.rc_ratelimit)] hdr RateLimit-Policy %[var(txn.rc_policy)] hdr Cache-Control no-store';
  cfg.push(
    `    http-request return status 503 content-type application/problem+json hdr Retry-After ${UNREACHABLE_RETRY_AFTER_S} string '${PROBLEM_UNREACHABLE}' if { var(txn.rc_status) -m str unreachable } { var(txn.rc_unreachable) -m str deny }`,
    `    http-request return status 429 content-type application/problem+json ${fields} string '${PROBLEM_429}' if { var(txn.rc_status) -m str 429 }`,
    `    http-request return status 503 content-type application/problem+json ${fields} string '${PROBLEM_503}' if { var(txn.rc_status) -m str 503 }`,
    `    http-request return status 403 content-type application/problem+json string '${PROBLEM_403}' if { var(txn.rc_status) -m str 403 }`,
    '    http-response set-header RateLimit %[var(txn.rc_ratelimit)] if { var(txn.rc_ratelimit) -m found }',
    '    http-response set-header RateLimit-Policy %[var(txn.rc_policy)] if { var(txn.rc_policy) -m found }',
    '    default_backend ratecontract_app',
    '',
    'backend ratecontract_app',
    `    server app ${o.upstream}`,
    '',
  );
  return cfg.join('\n');
}

/** The Lua action the HAProxy config loads (`ratecontract.lua`). */
export function emitHaproxyLua(config: RateContractConfig, o: EmitOptions): string {
  return [
    `-- Generated from ${config.file} by: ${o.command}`,
    '-- ratecontract.lua: asks decide whether a request may pass (HAProxy 2.6 httpclient).',
    `local DECIDE = "http://${o.decide}/_ratecontract_decide"`,
    '-- HAProxy 2.6\'s httpclient retries a refused connection 3 times, 1 s apart, with no setting to change it:',
    '-- once decide was unreachable, the routes\' fail modes apply without asking it for DOWN_FOR seconds.',
    'local DOWN_FOR = 2',
    'local down_until = 0',
    'core.register_action("ratecontract_decide", { "http-req" }, function(txn)',
    '    if core.now().sec < down_until then',
    '        txn:set_var("txn.rc_status", "unreachable")',
    '        return',
    '    end',
    '    local headers = {}',
    '    for name, values in pairs(txn.http:req_get_headers()) do',
    '        local n = string.lower(name)',
    '        if n ~= "content-length" and n ~= "transfer-encoding" and n ~= "connection" and n ~= "x-forwarded-method" and n ~= "x-forwarded-uri" and n ~= "x-original-method" and n ~= "x-original-uri" and n ~= "x-forwarded-for" and n ~= "x-real-ip" then',
    '            local list = {}',
    '            for i = 0, #values do if values[i] ~= nil then list[#list + 1] = values[i] end end',
    '            headers[n] = list',
    '        end',
    '    end',
    '    headers["x-forwarded-method"] = { txn.sf:method() }',
    '    headers["x-forwarded-uri"] = { txn.sf:pathq() }',
    '    headers["x-forwarded-for"] = { txn.sf:src() }',
    '    local ok, res = pcall(function() return core.httpclient():get{ url = DECIDE, headers = headers, timeout = 1000 } end)',
    '    if not ok or res == nil or res.status == nil or res.status == 0 or (res.status >= 500 and (res.headers == nil or res.headers["ratecontract-status"] == nil)) then',
    '        down_until = core.now().sec + DOWN_FOR',
    '        txn:set_var("txn.rc_status", "unreachable")',
    '        return',
    '    end',
    '    local function field(name) local v = res.headers[name]; if v ~= nil then return v[0] end end',
    '    local ra, rl, rp = field("retry-after"), field("ratelimit"), field("ratelimit-policy")',
    '    if rl ~= nil then txn:set_var("txn.rc_ratelimit", rl) end',
    '    if rp ~= nil then txn:set_var("txn.rc_policy", rp) end',
    '    if res.status >= 200 and res.status < 300 then return end',
    '    txn:set_var("txn.rc_status", field("ratecontract-status") or tostring(res.status))',
    '    txn:set_var("txn.rc_retry_after", ra or "")',
    'end)',
    '',
  ].join('\n');
}

/**
 * The config for `target`. Refuses (a `ConfigFileError` naming
 * `http.forwardedHeader`) a contract that reads the client address from
 * `Forwarded`: the emitted configs set `X-Forwarded-For` to the client's
 * address, and would pass a client's own `Forwarded` field on untouched.
 */
export function emitProxyConfig(target: EmitTarget, config: RateContractConfig, o: EmitOptions): string {
  if (config.http.forwardedHeader === 'forwarded') {
    throw new ConfigFileError('RC_INVALID_OPTION', config.file, 'http.forwardedHeader', "--emit writes configs that set X-Forwarded-For to the client's address and pass a client's own Forwarded field on: use x-forwarded-for (the default) with decide behind them");
  }
  switch (target) {
    case 'nginx':
      return emitNginx(config, o);
    case 'caddy':
      return emitCaddy(config, o);
    case 'haproxy':
      return emitHaproxy(config, o);
    case 'haproxy-lua':
      return emitHaproxyLua(config, o);
  }
}

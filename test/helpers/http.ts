/**
 * HTTP for the tests and the soak, loopback only. A call of the gateway's API goes through the
 * project's own typed client (src/http-client, openapi-fetch over the generated OpenAPI types), the
 * one services use: `gatewayCaller` for a gateway, `answerOf` for an answer of its typed methods.
 * `http` stays raw (undici) for everything that is not such a call: other servers (the simulator,
 * its checkout, Temporal Web, the codec server, metrics endpoints) and requests a typed client is
 * not meant to make, such as a body that is not JSON.
 *
 * No node:test and no stack here: the soak imports this module.
 */
import type { Middleware } from 'openapi-fetch';
import { request } from 'undici';
import { createGatewayClient, type GatewayClient } from '../../src/http-client';

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export interface CallOptions {
  body?: unknown;
  /** Sent as is (not JSON-encoded). */
  rawBody?: string;
  /** Sent as application/x-www-form-urlencoded (raw `http` only). */
  form?: Record<string, string>;
  headers?: Record<string, string>;
  /** Bounds the wait for the answer's headers and, once they came, each pause in its body. */
  timeoutMs?: number;
}

/** The JSON of an answer's text, or undefined when it is empty or not JSON. */
function jsonOf(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

/** A raw HTTP request to any loopback server (see the header for when to use it). */
export async function http(method: string, url: string, opts: CallOptions = {}): Promise<HttpAnswer> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  let body: string | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  } else if (opts.form) {
    body = new URLSearchParams(opts.form).toString();
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
  }
  const timeouts = opts.timeoutMs === undefined ? {} : { headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs };
  const res = await request(url, { method: method as 'GET', headers, body, ...timeouts });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: jsonOf(text) };
}

/** Each answer's text, kept by the clients' middleware before openapi-fetch parses (and consumes) the body. */
const answerTexts = new WeakMap<Response, string>();
const keepText: Middleware = {
  async onResponse({ response }) {
    answerTexts.set(response, await response.clone().text());
  },
};

/**
 * The typed client of the gateway at `baseUrl` (with `apiKey` as x-api-key on every request when
 * given), as `createGatewayClient` makes it for services, plus a middleware that keeps each
 * answer's text for `answerOf`. `timeoutMs` bounds each request as a whole.
 */
export function testGatewayClient(baseUrl: string, opts: { apiKey?: string; timeoutMs?: number } = {}): GatewayClient {
  const timeoutMs = opts.timeoutMs;
  const client = createGatewayClient({
    baseUrl,
    ...(opts.apiKey ? { apiKey: opts.apiKey } : {}),
    ...(timeoutMs === undefined ? {} : { fetch: (req: Request) => fetch(new Request(req, { signal: AbortSignal.timeout(timeoutMs) })) }),
  });
  client.use(keepText);
  return client;
}

/** An answer of a `testGatewayClient` as the tests read it: status, headers, text and JSON. */
export function answerOf(answer: { response: Response }): HttpAnswer {
  const { response } = answer;
  const text = answerTexts.get(response) ?? '';
  const headers: HttpAnswer['headers'] = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 1) headers['set-cookie'] = cookies;
  return { status: response.status, headers, text, json: jsonOf(text) };
}

/**
 * openapi-fetch's `request` with the method and path as strings. The tests build paths from the
 * ids they hold and also call routes a typed caller could not name (an unknown route, an id of
 * 2,000 characters, a broken percent-encoding), so the path is not checked against the document
 * here; the request is still built, sent and read by the typed client.
 */
type UntypedRequest = (method: string, path: string, init: Record<string, unknown>) => Promise<{ response: Response }>;

/**
 * One call of a gateway through its typed client: `body` JSON-encoded by the client, `rawBody` sent
 * as is (a body that is not JSON), `headers` added to (and overriding) the client's. Redirects are
 * not followed, so a test sees the gateway's own answer.
 */
export async function gatewayCall(client: GatewayClient, method: string, path: string, opts: CallOptions = {}): Promise<HttpAnswer> {
  if (opts.form) throw new Error('gatewayCall: the gateway takes no forms; use http() for a raw request');
  const send = client.request as unknown as UntypedRequest;
  const body = opts.rawBody !== undefined ? { body: opts.rawBody, bodySerializer: (raw: string) => raw } : opts.body !== undefined ? { body: opts.body } : {};
  return answerOf(await send(method.toLowerCase(), path, { ...body, headers: opts.headers ?? {}, parseAs: 'text', redirect: 'manual' }));
}

/**
 * A call of a URL the gateway handed out (a notification_url, a pin_url) through the typed client
 * of the gateway it names, with the headers the test chooses.
 */
export function gatewayUrlCall(method: string, url: string, opts: CallOptions = {}): Promise<HttpAnswer> {
  const u = new URL(url);
  return gatewayCall(testGatewayClient(u.origin), method, `${u.pathname}${u.search}`, opts);
}

/** A gateway's callers: `api` with the API key given, `call` with the headers the test chooses. */
export interface GatewayCaller {
  /** The typed client with the API key (every path, parameter, body and answer typed). */
  client: GatewayClient;
  /** A call with the API key (plus `headers`). */
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<HttpAnswer>;
  /** A call with whatever headers the test chooses (no API key unless it sends one). */
  call(method: string, path: string, opts?: CallOptions): Promise<HttpAnswer>;
}

export function gatewayCaller(baseUrl: string, apiKey?: string, opts: { timeoutMs?: number } = {}): GatewayCaller {
  const client = testGatewayClient(baseUrl, { ...opts, ...(apiKey ? { apiKey } : {}) });
  const bare = apiKey ? testGatewayClient(baseUrl, opts) : client;
  return {
    client,
    api: (method, path, body, headers) => gatewayCall(client, method, path, { body, ...(headers ? { headers } : {}) }),
    call: (method, path, o) => gatewayCall(bare, method, path, o),
  };
}

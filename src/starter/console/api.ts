/**
 * The console's one way to act: the gateway's own HTTP API, in process (fastify's `inject`), with
 * the signed-in person's access token as `Authorization: Bearer`. The API verifies the token and
 * decides what the person may do, exactly as for any caller; the console only renders the answer.
 */
import type { FastifyInstance } from 'fastify';
import type { ConsoleSession } from './sessions';

/** A JSON body of the gateway's API (its documented shapes, docs/openapi.json), read field by field by the pages. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = Record<string, any>;

export interface ApiAnswer {
  status: number;
  json: Json;
}

export async function callApi(app: FastifyInstance, session: ConsoleSession, method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown): Promise<ApiAnswer> {
  const res = await app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${session.accessToken}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
  let json: Json;
  try {
    json = res.body ? (JSON.parse(res.body) as Json) : {};
  } catch {
    json = { message: `the API answered HTTP ${res.statusCode} without JSON` };
  }
  return { status: res.statusCode, json };
}

/** A query string of the non-empty values of `q`. */
export function queryOf(q: Record<string, string | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== '') p.set(k, v);
  const s = p.toString();
  return s ? `?${s}` : '';
}

/** What a refusal says, for a flash message: the API's own message, never a token. */
export const refusalOf = (a: ApiAnswer): string => `The API answered ${a.status}: ${String(a.json.message ?? a.json.error ?? 'no message')}`;

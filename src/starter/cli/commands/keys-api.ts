/**
 * The keys made through the gateway's API (client/api-keys.ts), for `mpf keys create|list|revoke|
 * rotate`: through the gateway (MPF_GATEWAY_URL, and an operator's MPF_API_KEY or a person's
 * MPF_ACCESS_TOKEN: the routes are operators'), or Temporal directly for an operator holding the
 * Temporal credentials and payload keys. The key is printed by `create` and `rotate` only, once.
 */
import type { ApiKeyView } from '../../../contract/api-keys';
import type { MpfGateway } from '../../../http-client';
import type { MpfClient } from '../../client/mpf-client';
import { operatorCall } from '../face';
import { printJson, printLines } from '../output';

type Shown = ApiKeyView & { key?: string };

/** The operations, answered the same way by the gateway and by Temporal directly. */
export interface ApiKeyOps {
  list(): Promise<Shown[]>;
  create(body: { role: ApiKeyView['role']; label?: string; expires_at?: string }): Promise<Shown>;
  revoke(id: string): Promise<Shown>;
  rotate(id: string, overlapSeconds: number | undefined): Promise<Shown>;
}

/** One key, one line (and the key on lines of its own, when the answer holds it). */
export function apiKeyLines(k: Shown, now = Date.now()): string[] {
  const state = k.revoked_at
    ? `revoked ${k.revoked_at}`
    : k.expires_at
      ? `${Date.parse(k.expires_at) <= now ? 'expired' : 'expires'} ${k.expires_at}`
      : 'no expiry';
  const lines = [[k.id, k.role.padEnd(9), state, k.rotated_to ? `rotated to ${k.rotated_to}` : '', `by ${k.created_by}`, k.label ?? ''].filter(Boolean).join('  ')];
  if (k.key) lines.push(`key:   ${k.key}`, '       (shown once: give it to its caller now; only its SHA-256 is kept)');
  return lines;
}

function viaClient(mpf: MpfClient, by: string): ApiKeyOps {
  const k = mpf.apiKeys;
  return {
    list: () => k.list(),
    create: (body) => k.create(body, { by }),
    revoke: (id) => k.revoke(id, { by }),
    rotate: (id, s) => k.rotate(id, s === undefined ? {} : { overlap_seconds: s }, { by }),
  };
}

function viaGateway(gw: MpfGateway): ApiKeyOps {
  return {
    list: () => gw.listApiKeys() as Promise<Shown[]>,
    create: (body) => gw.createApiKey(body) as Promise<Shown>,
    revoke: (id) => gw.revokeApiKey(id) as Promise<Shown>,
    rotate: (id, s) => gw.rotateApiKey(id, s === undefined ? {} : { overlap_seconds: s }) as Promise<Shown>,
  };
}

/** Runs one operation on the gateway or Temporal and prints its answer (JSON with --json). */
export async function runApiKeys<T extends Shown | Shown[]>(what: string, op: (k: ApiKeyOps) => Promise<T>, json: boolean | undefined): Promise<void> {
  const answer = await operatorCall(`mpf keys ${what}`, (gw) => op(viaGateway(gw)), (c) => op(viaClient(c.mpf, 'mpf keys (Temporal credentials)')));
  if (json) return printJson(Array.isArray(answer) ? { data: answer } : answer);
  if (Array.isArray(answer)) return printLines(answer.length ? answer.flatMap((k) => apiKeyLines(k)) : ['no API keys made through the API (the keyring file: mpf keys list --keyring FILE)']);
  printLines(what === 'revoke' ? ['revoked:', ...apiKeyLines(answer)] : apiKeyLines(answer));
}

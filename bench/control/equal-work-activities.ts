/**
 * The equal-work control's activities: the provider calls a competent engineer writes from the
 * provider's API document and Temporal's samples, with the same library choices as ours (undici,
 * zod) and nothing else: the request checked against the contract's schemas before it is sent,
 * one undici Pool per origin with the same connection bound, the envelope and the data parsed with
 * the contract's schemas. No sealing (the payload codec alone keeps auth_token and PIN out of
 * history in plaintext), no provider guard, no metrics, no call observers, no event settings.
 *
 * A 4xx answer is a non-retryable ApplicationFailure, anything else the activity's retry; a
 * rejected confirmation is an answer ('rejected' with the provider's message), as ours treats it.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Pool } from 'undici';
import type { z } from 'zod';
import {
  ASSUMPTIONS,
  describeZodError,
  Envelope,
  HostedLinkData,
  HostedLinkRequest,
  isSuccessStatus,
  PROVIDER_PATHS,
  SwapConfirmRequest,
  SwapInitData,
  SwapInitRequest,
} from '../../src/contract/provider';

export interface EqualWorkProvider {
  baseUrl: string;
  secretKey: string;
  accessToken: string;
  merchantRef: string;
}

export interface EqualConfirmResult {
  outcome: 'confirmed' | 'rejected';
  message: string;
}

const TIMEOUTS = { connect: 5_000, headers: 10_000, body: 10_000 };

/** The activities, over one undici Pool (close it with `close`). */
export function createEqualWorkActivities(p: EqualWorkProvider) {
  const origin = new URL(p.baseUrl).origin;
  const pool = new Pool(origin, {
    connections: ASSUMPTIONS.maxConnectionsPerOrigin,
    pipelining: 1,
    connect: { timeout: TIMEOUTS.connect },
    headersTimeout: TIMEOUTS.headers,
    bodyTimeout: TIMEOUTS.body,
  });
  const secretKeyHeaders = { authorization: `Bearer ${p.secretKey}`, 'content-type': 'application/json' };

  /** Checks our request against the contract; a bad one is never sent (the message names the field). */
  const checked = <S extends z.ZodType>(what: string, schema: S, value: unknown): z.output<S> => {
    const r = schema.safeParse(value);
    if (!r.success) throw ApplicationFailure.nonRetryable(`${what}: request not sent (${describeZodError(r.error)})`, 'InvalidRequest');
    return r.data;
  };

  /** One POST: the envelope on a 2xx with a success status, else a failure (4xx final, the rest retried). */
  const post = async (what: string, path: string, headers: Record<string, string>, body: unknown): Promise<{ ok: boolean; envelope?: Envelope; status: number }> => {
    const res = await pool.request({ path, method: 'POST', headers: { accept: 'application/json', ...headers }, body: JSON.stringify(body) });
    const text = await res.body.text();
    let envelope: Envelope | undefined;
    try {
      const parsed = Envelope.safeParse(JSON.parse(text));
      if (parsed.success) envelope = parsed.data;
    } catch {
      // not JSON: no envelope
    }
    const ok = res.statusCode >= 200 && res.statusCode < 300 && envelope !== undefined && isSuccessStatus(envelope.status);
    if (!ok && (res.statusCode < 400 || res.statusCode >= 500 || res.statusCode === 429)) {
      throw ApplicationFailure.retryable(`${what}: provider answered ${res.statusCode} without a usable answer`, 'ProviderUnavailable');
    }
    return { ok, envelope, status: res.statusCode };
  };

  const dataOf = <S extends z.ZodType>(what: string, schema: S, envelope: Envelope | undefined): z.output<S> => {
    const r = schema.safeParse(envelope?.data);
    if (!r.success) throw ApplicationFailure.retryable(`${what}: unexpected answer (${describeZodError(r.error)})`, 'ProviderUnavailable');
    return r.data;
  };

  const refused = (what: string, status: number, envelope: Envelope | undefined): ApplicationFailure =>
    ApplicationFailure.nonRetryable(`${what}: provider refused (${status}): ${envelope?.message ?? ''}`, 'ProviderRejected');

  return {
    activities: {
      async equalInitSwap(req: SwapInitRequest): Promise<SwapInitData> {
        const body = checked('swap init', SwapInitRequest, req);
        const r = await post('swap init', PROVIDER_PATHS.swapInit, secretKeyHeaders, body);
        if (!r.ok) throw refused('swap init', r.status, r.envelope);
        return dataOf('swap init', SwapInitData, r.envelope);
      },

      async equalConfirmSwap(req: SwapConfirmRequest): Promise<EqualConfirmResult> {
        const body = checked('swap confirm', SwapConfirmRequest, req);
        const r = await post('swap confirm', PROVIDER_PATHS.swapConfirm, secretKeyHeaders, body);
        return { outcome: r.ok ? 'confirmed' : 'rejected', message: r.envelope?.message ?? '' };
      },

      async equalCreateLink(req: HostedLinkRequest): Promise<HostedLinkData> {
        const body = checked('hosted link', HostedLinkRequest, req);
        const headers = { authorization: `Bearer ${p.accessToken}`, 'x-merchant-ref': p.merchantRef, 'content-type': 'application/json' };
        const r = await post('hosted link', PROVIDER_PATHS.hostedLink, headers, body);
        if (!r.ok) throw refused('hosted link', r.status, r.envelope);
        return dataOf('hosted link', HostedLinkData, r.envelope);
      },
    },
    close: () => pool.close(),
  };
}

export type EqualWorkActivities = ReturnType<typeof createEqualWorkActivities>['activities'];

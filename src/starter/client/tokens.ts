/**
 * The per-flow tokens behind one API: the pin_token a user's PIN page presents and the token in
 * the notification URL handed to the provider. New tokens are v2 (flow-tokens.ts: checked with
 * the payload keys alone within their local window); swaps started with v1 pin_tokens
 * (pin-tokens.ts) still get theirs back. Only SHA-256 hashes of tokens are kept, in the flow's
 * encrypted memo, and compared in constant time.
 */
import { createHash } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { secretMatches } from '../../auth/secrets';
import { FlowTokens, type TokenPurpose } from './flow-tokens';
import type { TemporalGate } from './health';
import { type PinTokenSeed, PinTokens } from './pin-tokens';

/** What a flow's memo holds: token hashes, the pin_token's seed, and the start's Idempotency-Key record. */
export interface TokenMemo extends Partial<PinTokenSeed> {
  pin_token_sha256?: string;
  notify_token_sha256?: string;
  /** The Idempotency-Key record (workflow id) of the request that started the flow, if any. */
  idempotency_id?: string;
}

export type TokenVerdict = 'authentic' | 'ok' | 'unknown_flow' | 'bad_token' | 'closed';

export const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** The memo field that keeps the hash of each purpose's token. */
const TOKEN_PURPOSE: Partial<Record<keyof TokenMemo, TokenPurpose>> = { pin_token_sha256: 'pin', notify_token_sha256: 'notify' };

export class ClientTokens {
  /** v1 pin_tokens (swaps started before v2: handed out again by pinTokenOf). */
  private readonly v1: PinTokens;
  /** v2 pin and notification tokens, checked without a Temporal call. */
  private readonly v2: FlowTokens;

  constructor(
    keys: string,
    private readonly gate: TemporalGate,
    localWindowSeconds?: number,
  ) {
    this.v1 = new PinTokens(keys);
    this.v2 = new FlowTokens(keys, localWindowSeconds !== undefined ? { localWindowSeconds } : {});
  }

  /** A new v2 token for a flow (and the seed that derives it again, kept in the memo). */
  issue(purpose: TokenPurpose, flowId: string): ReturnType<FlowTokens['issue']> {
    return this.v2.issue(purpose, flowId);
  }

  /**
   * A swap's pin_token again (derived from the seed in its encrypted memo: a v2 token, or a v1 one
   * when the memo's hash says the swap was started with one); undefined for a swap started before
   * tokens were derived, or whose seed key left the ring.
   */
  async pinTokenOf(swapId: string): Promise<string | undefined> {
    const memo = (await this.gate.guard(() => this.gate.temporal.workflow.getHandle(swapId).describe(), swapId)).memo as TokenMemo | undefined;
    if (!memo?.pin_token_nonce || !memo.pin_token_key || !memo.pin_token_sha256) return undefined;
    const candidates = [
      this.v2.derive('pin', swapId, { nonce: memo.pin_token_nonce, key: memo.pin_token_key }),
      this.v1.derive(swapId, { pin_token_nonce: memo.pin_token_nonce, pin_token_key: memo.pin_token_key }),
    ];
    return candidates.find((t): t is string => t !== undefined && sha256(t) === memo.pin_token_sha256);
  }

  /**
   * Checks a per-flow token. A v2 token made by a key of the ring for this flow, recently, is
   * 'authentic' without any call to Temporal (flow-tokens.ts): whether the flow is still open is
   * then not known, and the call that follows (update, signal, query) finds out. Any other token
   * is compared with the hash in the flow's memo, in constant time: 'ok' (flow running),
   * 'closed' (a token of a closed flow has expired with it), 'unknown_flow' or 'bad_token'.
   */
  async verify(flowId: string, field: keyof TokenMemo, token: string): Promise<TokenVerdict> {
    const purpose = TOKEN_PURPOSE[field];
    if (purpose && this.v2.verifyLocally(purpose, flowId, token)) return 'authentic';
    let desc;
    try {
      desc = await this.gate.guard(() => this.gate.temporal.workflow.getHandle(flowId).describe(), flowId);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return 'unknown_flow';
      throw err;
    }
    const expected = (desc.memo as TokenMemo | undefined)?.[field];
    if (typeof expected !== 'string' || typeof token !== 'string' || token.length === 0) return 'bad_token';
    const stored = Buffer.from(expected, 'hex');
    if (stored.length !== 32 || !secretMatches(token, stored)) return 'bad_token';
    return desc.status.name === 'RUNNING' ? 'ok' : 'closed';
  }
}

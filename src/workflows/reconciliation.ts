/**
 * Reconciliation of a flow left in `needs_reconciliation` (money may have moved and nothing
 * settled it), workflow-safe and shared with the client: the `resolve` input and its synchronous
 * check, the audit record kept in the view, and the wait that keeps such a flow open until an
 * operator resolves it.
 *
 * The wait is new behaviour (before it, `needs_reconciliation` completed the workflow), so it is
 * guarded by `patched(RESOLVE_PATCH)`: histories recorded before it still replay.
 */
import { LATE_DOUBT_PATCH, RESOLVE_PATCH } from './patches';
import { allHandlersFinished, condition, patched } from '@temporalio/workflow';
import type { FlowKind } from './flow-ids';

export { RESOLVE_PATCH };

/** What an operator found at the provider, per flow kind. */
export const RESOLUTION_OUTCOMES: Readonly<Record<FlowKind, readonly string[]>> = {
  swap: ['confirmed', 'failed'],
  payment_link: ['paid', 'failed'],
};

/** The `resolve` update's argument. No secrets: references, a name and words only. */
export interface ResolveInput {
  /** swap: confirmed | failed (the provider did or did not convert); link: paid | failed. */
  outcome: string;
  /** The provider's reference the operator checked out of band (e.g. the payment_ref or a statement line). */
  provider_reference: string;
  /** Who decided. */
  operator: string;
  /** Why, in words (what was checked, what was done: fulfilled, refunded, …). */
  note: string;
}

/** The audit record in the view once a flow was resolved. */
export interface Reconciliation extends ResolveInput {
  resolved_at: string;
  /** Why the flow needed reconciliation (its reason before the resolution). */
  reason_before?: string;
}

const FIELDS = ['outcome', 'provider_reference', 'operator', 'note'] as const;
const PROVIDER_REFERENCE = /^[A-Za-z0-9][A-Za-z0-9._:/#-]{0,99}$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;
/** A run of 32+ opaque characters (a token, key or hash) or a sealed value: not for a note. */
const SECRET_LIKE = /(?:[A-Za-z0-9+/_=-]{32,})|sealed:v1:/;

/** What is wrong with a resolve input ("field: rule"), or undefined. Pure. */
export function checkResolveInput(input: unknown, kind: FlowKind): { field: string; message: string } | undefined {
  const bad = (field: string, rule: string) => ({ field, message: `${field}: ${rule}` });
  if (!input || typeof input !== 'object' || Array.isArray(input)) return bad('body', 'must be an object with outcome, provider_reference, operator and note');
  const o = input as Record<string, unknown>;
  const extra = Object.keys(o).find((k) => !(FIELDS as readonly string[]).includes(k));
  if (extra !== undefined) return bad(extra.slice(0, 40), 'is not a field of a resolution (outcome, provider_reference, operator, note)');
  const outcomes = RESOLUTION_OUTCOMES[kind];
  if (typeof o.outcome !== 'string' || !outcomes.includes(o.outcome)) return bad('outcome', `must be one of ${outcomes.join(', ')}`);
  if (typeof o.provider_reference !== 'string' || !PROVIDER_REFERENCE.test(o.provider_reference)) {
    return bad('provider_reference', 'must be 1-100 characters of letters, digits and . _ : / # -, starting with a letter or digit');
  }
  if (typeof o.operator !== 'string' || o.operator.trim().length === 0 || o.operator.length > 100 || CONTROL.test(o.operator) || o.operator.includes('\n')) {
    return bad('operator', 'must be a name of 1-100 characters on one line');
  }
  if (typeof o.note !== 'string' || o.note.trim().length === 0 || o.note.length > 1000 || CONTROL.test(o.note)) {
    return bad('note', 'must be 1-1000 characters of text');
  }
  if (SECRET_LIKE.test(o.note) || SECRET_LIKE.test(o.operator)) {
    return bad(SECRET_LIKE.test(o.note) ? 'note' : 'operator', 'must not contain tokens, keys or other secrets (no run of 32 or more opaque characters)');
  }
  return undefined;
}

/** The part of a flow session reconciliation needs. */
export interface Resolvable {
  readonly state: string;
  reconciliation: Reconciliation | undefined;
}

/**
 * The last step of a flow: one in `needs_reconciliation` stays open until `resolve` moves it to
 * `reconciled` (no time limit: it is an operator's open task; terminated in Temporal, its next run
 * (closed-flow.ts) waits for the resolution in its place).
 * Flows that never needed reconciliation, and histories from before the patch, end as before.
 */
/**
 * After a flow handed over its last events: whether a notification that arrived meanwhile put it
 * in needs_reconciliation (money for a link just cancelled), so it must wait for its resolution
 * again instead of completing unresolvable. Synchronous (no workflow promise on the common path);
 * behind LATE_DOUBT_PATCH, so histories that completed so replay as they did.
 */
export function lateDoubt(s: Resolvable): boolean {
  return s.state === 'needs_reconciliation' && patched(LATE_DOUBT_PATCH);
}

export async function awaitResolution(s: Resolvable): Promise<void> {
  if (s.state !== 'needs_reconciliation') return;
  if (!patched(RESOLVE_PATCH)) return;
  await condition(() => s.state !== 'needs_reconciliation');
  await condition(allHandlersFinished);
}

/**
 * What Temporal Web shows an operator about a flow (workflow-safe, pure): the one-line static
 * summary and the static details given at start (user metadata, set by the client), and the
 * current details the workflow keeps up to date (`setCurrentDetails`, answered through the SDK's
 * `__temporal_workflow_metadata` query). Markdown, as Temporal Web renders it.
 *
 * No personal data and no secrets: kind, amounts, currencies, state, attempts, times, the
 * merchant's reference — never user_ref, names, e-mail, phone, PIN, tokens or URLs (pay_link and
 * notification URLs carry tokens). User metadata and query answers go through the payload codec
 * (encrypted in history), but a summary is what people read: it holds nothing to protect.
 */
import type { LinkState, SwapState } from './messages';

const STATE_WORDS: Record<SwapState | LinkState, string> = {
  initializing: 'initializing',
  awaiting_pin: 'awaiting PIN',
  confirming: 'confirming',
  confirmed: 'confirmed',
  creating: 'creating',
  awaiting_payment: 'awaiting payment',
  paid: 'paid',
  failed: 'failed',
  expired: 'expired',
  cancelled: 'cancelled',
  needs_reconciliation: 'NEEDS RECONCILIATION',
  reconciled: 'reconciled by an operator',
  terminated: 'terminated in Temporal',
};

/** A state in an operator's words ("awaiting PIN"). */
export function stateWords(state: SwapState | LinkState): string {
  return STATE_WORDS[state] ?? state;
}

const amountOf = (n: number): string => (Number.isInteger(n) ? String(n) : n.toFixed(2));
const oneLine = (s: string, max = 200): string => {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};
const utc = (ms: number): string => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;

export interface SwapFacts {
  from_currency: string;
  to_currency: string;
  amount: number;
  txn_ref: string;
}

export interface LinkFacts {
  currency: string;
  amount: number;
  txn_merchant_ref: string;
}

/** "swap USD 100 → NGN" */
export const swapHeadline = (f: Pick<SwapFacts, 'from_currency' | 'to_currency' | 'amount'>): string =>
  `swap ${f.from_currency} ${amountOf(f.amount)} → ${f.to_currency}`;

/** "payment link NGN 2500" */
export const linkHeadline = (f: Pick<LinkFacts, 'currency' | 'amount'>): string => `payment link ${f.currency} ${amountOf(f.amount)}`;

// ---- static (client, at start) ------------------------------------------------------------------

export function swapStaticSummary(f: SwapFacts): string {
  return `${swapHeadline(f)} · ref ${f.txn_ref}`;
}

export function swapStaticDetails(f: SwapFacts & { pin_max_attempts: number; started_at: string }): string {
  return [
    `**${swapHeadline(f)}** (wallet swap, reference \`${f.txn_ref}\`)`,
    '',
    `- started ${f.started_at.slice(0, 19).replace('T', ' ')} UTC; at most ${f.pin_max_attempts} PIN attempts inside the provider's window`,
    '- state now: *Current Details*, the `state` query, or the `MpfState` column',
    '- `needs_reconciliation`: money may have moved; follow docs/operations/reconciliation.md',
  ].join('\n');
}

export function linkStaticSummary(f: LinkFacts): string {
  return `${linkHeadline(f)} · ref ${f.txn_merchant_ref}`;
}

export function linkStaticDetails(f: LinkFacts & { lifetime_seconds: number; started_at: string }): string {
  return [
    `**${linkHeadline(f)}** (hosted bank-transfer link, reference \`${f.txn_merchant_ref}\`)`,
    '',
    `- started ${f.started_at.slice(0, 19).replace('T', ' ')} UTC; the link lives ${Math.round(f.lifetime_seconds / 60)} min`,
    '- state now: *Current Details*, the `state` query, or the `MpfState` column',
    '- `needs_reconciliation`: money may have moved; follow docs/operations/reconciliation.md',
  ].join('\n');
}

// ---- current (workflow, kept up to date) --------------------------------------------------------

export interface SwapNow extends Pick<SwapFacts, 'from_currency' | 'to_currency' | 'amount'> {
  state: SwapState;
  attempts_left: number;
  attempts_used: number;
  converted_amount?: number;
  rate_used?: number;
  deadline_ms?: number;
  reason?: string;
  notifications: number;
  updated_at: string;
}

/** "swap USD 100 → NGN, awaiting PIN, 2 attempts left", then what an operator needs next. */
export function swapCurrentDetails(n: SwapNow): string {
  const head = [swapHeadline(n), stateWords(n.state)];
  if (n.state === 'awaiting_pin' || n.state === 'initializing') head.push(`${n.attempts_left} attempt${n.attempts_left === 1 ? '' : 's'} left`);
  const lines = [`**${head.join(', ')}**`, ''];
  if (n.converted_amount !== undefined) lines.push(`- converts to ${n.to_currency} ${amountOf(n.converted_amount)}${n.rate_used !== undefined ? ` at ${n.rate_used}` : ''}`);
  if (n.deadline_ms !== undefined && (n.state === 'awaiting_pin' || n.state === 'confirming')) lines.push(`- PIN window closes ${utc(n.deadline_ms)}`);
  lines.push(`- PIN attempts used: ${n.attempts_used}`);
  if (n.reason) lines.push(`- reason: ${oneLine(n.reason)}`);
  if (n.notifications > 0) lines.push(`- provider notifications: ${n.notifications}`);
  lines.push(`- updated ${n.updated_at.slice(0, 19).replace('T', ' ')} UTC`);
  return lines.join('\n');
}

export interface LinkNow extends Pick<LinkFacts, 'currency' | 'amount'> {
  state: LinkState;
  expires_at_ms?: number;
  reason?: string;
  notifications: number;
  updated_at: string;
}

/** "payment link NGN 2500, awaiting payment", then what an operator needs next. */
export function linkCurrentDetails(n: LinkNow): string {
  const lines = [`**${linkHeadline(n)}, ${stateWords(n.state)}**`, ''];
  if (n.expires_at_ms !== undefined && n.state === 'awaiting_payment') lines.push(`- expires ${utc(n.expires_at_ms)}`);
  if (n.reason) lines.push(`- reason: ${oneLine(n.reason)}`);
  lines.push(`- provider notifications: ${n.notifications}`);
  lines.push(`- updated ${n.updated_at.slice(0, 19).replace('T', ' ')} UTC`);
  return lines.join('\n');
}

/**
 * The end of the soak: every flow's final view (read again through a gateway) against the
 * simulator's ledger (the provider's own record of what it applied).
 *
 * - lost: never reached a terminal state in the time bound, or cannot be found;
 * - duplicate side effect: more than one swap.initialized, swap.confirmed or link.created effect
 *   for one reference;
 * - inconsistent: confirmed without exactly one committed confirm; failed, expired or cancelled
 *   with a committed confirm; paid without a link.paid effect; a link.paid effect not reflected
 *   (the link is neither paid nor needs_reconciliation).
 * - a swap expired because the provider guard held its confirmation ("… never sent: no money
 *   moved") although the provider received that confirmation (a swap.confirm request not refused
 *   as a wrong PIN);
 * - reconciled (an operator resolved it) with an outcome the ledger contradicts: confirmed without
 *   exactly one committed confirm, paid without a payment, failed with either.
 * needs_reconciliation is never inconsistent by itself; it is counted, with whether the provider
 * had applied the doubtful step (a committed confirm, a payment): both are reconcilable.
 */
import type { EffectEntry, RequestEntry } from '../../src/simulator/ledger';
import type { LedgerView, SimulatorControl } from '../../src/simulator/control-client';
import { LINK_TERMINAL, readView, SWAP_TERMINAL, type Flow, type FlowEnv } from './flows';
import { sleep } from './http';

export interface Verdict {
  flow: Flow;
  state: string | undefined;
  reason?: string;
  lost: boolean;
  duplicate: string[];
  inconsistent: string[];
  effects: Record<string, number>;
  requests: Record<string, number>;
  /** needs_reconciliation, and whether the provider had applied the step in doubt. */
  reconciliation?: { providerApplied: boolean };
}

export interface Verification {
  verdicts: Verdict[];
  ledger: LedgerView;
  ledgerTruncated: boolean;
}

const count = <T>(xs: T[], key: (x: T) => string): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const x of xs) out[key(x)] = (out[key(x)] ?? 0) + 1;
  return out;
};

/** Reads a view, retrying a while (a worker may still be starting; a gateway may answer 503). */
async function finalView(env: FlowEnv, f: Flow, untilMs: number): Promise<Record<string, unknown> | undefined> {
  const terminal = f.kind === 'swap' ? SWAP_TERMINAL : LINK_TERMINAL;
  let last: Record<string, unknown> | undefined;
  do {
    last = (await readView(env, f)) ?? last;
    if (last && terminal.has(last.state as string)) return last;
    await sleep(1_000);
  } while (Date.now() < untilMs);
  return last;
}

export function judge(f: Flow, view: Record<string, unknown> | undefined, effects: EffectEntry[], requests: RequestEntry[]): Verdict {
  const state = view?.state as string | undefined;
  const eff = count(effects, (e) => e.kind);
  const req = count(requests, (r) => r.endpoint);
  const v: Verdict = {
    flow: f,
    state,
    reason: view?.reason as string | undefined,
    lost: false,
    duplicate: [],
    inconsistent: [],
    effects: eff,
    requests: req,
  };
  const terminal = f.kind === 'swap' ? SWAP_TERMINAL : LINK_TERMINAL;
  if (!state || !terminal.has(state)) v.lost = true;
  const n = (k: string) => eff[k] ?? 0;
  for (const k of f.kind === 'swap' ? ['swap.initialized', 'swap.confirmed'] : ['link.created']) {
    if (n(k) > 1) v.duplicate.push(`${n(k)} × ${k}`);
  }
  const resolved = (view?.reconciliation as { outcome?: string } | undefined)?.outcome;
  if (f.kind === 'swap') {
    const confirms = n('swap.confirmed');
    if (state === 'confirmed' && confirms !== 1) v.inconsistent.push(`confirmed with ${confirms} committed confirm(s)`);
    if ((state === 'failed' || state === 'expired' || state === 'cancelled') && confirms > 0) v.inconsistent.push(`${state} with a committed confirm`);
    if (state === 'expired' && /held by the provider guard.*never sent/.test(v.reason ?? '')) {
      // The confirmation held is the swap's last: its PINs go one at a time, each attempt's retries
      // before the next PIN. A wrong PIN's request was refused (4xx), and a request of that same
      // attempt before it (a hang or reset, then retried) was not this confirmation: only requests
      // after the last refusal are. Any of those that was not refused reached the provider.
      const confirms = requests.filter((r) => r.endpoint === 'swap.confirm').sort((a, b) => a.seq - b.seq);
      const refused = (r: RequestEntry): boolean => typeof r.status === 'number' && r.status >= 400 && r.status < 500;
      const lastRefusal = confirms.map(refused).lastIndexOf(true);
      const sent = confirms.slice(lastRefusal + 1).filter((r) => !refused(r)).length;
      if (sent > 0) v.inconsistent.push(`expired as never sent, but the provider received ${sent} confirmation(s)`);
    }
    if (state === 'needs_reconciliation') v.reconciliation = { providerApplied: confirms > 0 };
    if (state === 'reconciled' && (resolved === 'confirmed' ? confirms !== 1 : confirms > 0)) v.inconsistent.push(`reconciled as ${resolved ?? '?'} with ${confirms} committed confirm(s)`);
  } else {
    const paid = n('link.paid');
    if (state === 'paid' && paid === 0) v.inconsistent.push('paid without a link.paid effect');
    if (paid > 0 && state !== undefined && !['paid', 'needs_reconciliation', 'reconciled'].includes(state)) v.inconsistent.push(`link.paid effect but the link is ${state}`);
    if (state === 'needs_reconciliation') v.reconciliation = { providerApplied: paid > 0 };
    if (state === 'reconciled' && (resolved === 'paid') !== paid > 0) v.inconsistent.push(`reconciled as ${resolved ?? '?'} with ${paid} payment(s) at the provider`);
  }
  return v;
}

export async function verify(env: FlowEnv, sim: SimulatorControl, flows: Flow[], o: { graceMs: number; say: (l: string) => void }): Promise<Verification> {
  const until = Date.now() + o.graceMs;
  const views = new Map<Flow, Record<string, unknown> | undefined>();
  // A few at a time: the gateways and workers have just been through the chaos.
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < flows.length) {
        const f = flows[next++]!;
        views.set(f, await finalView(env, f, until));
      }
    }),
  );
  const ledger = await sim.ledger();
  const byRef = new Map<string, { effects: EffectEntry[]; requests: RequestEntry[] }>();
  const slot = (ref: string | undefined) => {
    if (!ref) return undefined;
    let s = byRef.get(ref);
    if (!s) byRef.set(ref, (s = { effects: [], requests: [] }));
    return s;
  };
  for (const e of ledger.effects) slot(e.ref)?.effects.push(e);
  for (const r of ledger.requests) slot(r.ref)?.requests.push(r);
  // The simulator keeps the newest 10,000 entries of each list: a full list may have lost the oldest.
  const ledgerTruncated = ledger.effects.length >= 10_000 || ledger.requests.length >= 10_000;
  if (ledgerTruncated) o.say('warning: the simulator ledger is full (10,000 entries): the oldest entries may be gone');
  const verdicts = flows.map((f) => {
    const s = byRef.get(f.ref) ?? { effects: [], requests: [] };
    return judge(f, views.get(f), s.effects, s.requests);
  });
  return { verdicts, ledger, ledgerTruncated };
}

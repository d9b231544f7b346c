/**
 * The one list of live patch ids (workflow-safe, pure data). A change to workflow code that
 * changes the commands a workflow issues goes behind `patched(<id>)` with an id listed here, so
 * that flows started by an older release replay on the new one. test/unit/patches.test.ts fails
 * when workflow code calls `patched` or `deprecatePatch` with an id that is not listed.
 *
 * The life of an id (docs/operations/upgrading.md):
 *   1. `patched(ID)`: new flows take the new branch, old histories the old one;
 *   2. `deprecatePatch(ID)` with only the new branch, once no flow of a release before `addedIn`
 *      is open (check: `temporal workflow count --query 'ExecutionStatus="Running" AND StartTime < "<release date>"'`)
 *      and no kept history in test/replay/ needs the old branch;
 *   3. removal of the call and of the entry, one release after that.
 */

export interface LivePatch {
  /** The id given to patched()/deprecatePatch(); never reused for another change. */
  id: string;
  /** What the new branch does that the old one did not. */
  why: string;
  /** The release (package version + commit) that added it. */
  addedIn: string;
  /** When it may go to deprecatePatch. */
  deprecateWhen: string;
}

/** Merchant events: the outbox, the `events-<flow_id>` delivery child and the event settings. */
export const MERCHANT_EVENTS_PATCH = 'mpf-merchant-events-v1';
/** needs_reconciliation stays open until an operator resolves it (before: the flow completed). */
export const RESOLVE_PATCH = 'mpf-reconcile-resolve-v1';
/** A flow a late notification put in needs_reconciliation while its last events were handed over stays open for its resolution. */
export const LATE_DOUBT_PATCH = 'mpf-late-doubt-stays-open-v1';
/** A confirmation the provider guard held on every attempt ends the swap `expired` (before: in doubt). */
export const PROVIDER_GUARD_PATCH = 'mpf-provider-guard-held-v1';
/** A half-open breaker's successful GET lets one real call decide, instead of closing it (the provider guard workflow). */
export const GUARD_TRIAL_PATCH = 'mpf-guard-trial-v1';
/** The provider guard keeps its view in its memo (read by describe, no worker needed). */
export const GUARD_MEMO_PATCH = 'mpf-guard-memo-v1';
/** A confirmation held until its activity's schedule-to-close timeout (last attempt waiting for a worker) also ends `expired`. */
export const HELD_TIMEOUT_PATCH = 'mpf-held-timeout-expires-v1';
/** A flow keeps its merchant events in its memo (read by visibility and describe, no worker needed). */
export const EVENTS_MEMO_PATCH = 'mpf-events-memo-v1';
/** The delivery workflow also delivers to the deployment's registered webhook endpoints, asking for them at each event. */
export const WEBHOOK_ENDPOINTS_PATCH = 'mpf-webhook-endpoints-v1';
/**
 * A flow starts its delivery workflow only when an event has somewhere to go, and records this one
 * patch in place of the merchant-events and events-memo patches (both branches taken).
 */
export const LEAN_EVENTS_PATCH = 'mpf-lean-events-v1';
/**
 * A flow whose start carried its kind, reference and first state (typed search attributes) does
 * not upsert them again; it records this one patch in place of mpf-lean-events-v1 (and so of the
 * two that one stands for), whose branches it takes.
 */
export const START_CARRIED_PATCH = 'mpf-start-carried-v1';
/**
 * The swap's confirmation answers the event settings too (as the first activity does), and a
 * provider notification carries the registered types its receiver read, so the event of the state
 * either decides needs no eventTargets local activity; a flow records this one patch in place of
 * mpf-start-carried-v1, whose branches it takes.
 */
export const FRESH_TARGETS_PATCH = 'mpf-fresh-targets-v1';
/**
 * The starter carries the flow's empty events list in its start memo, so the flow's first workflow
 * task upserts no empty list; a flow records this one patch in place of mpf-fresh-targets-v1, whose
 * branches it takes.
 */
export const START_MEMO_PATCH = 'mpf-start-memo-v1';

export const LIVE_PATCHES: readonly LivePatch[] = [
  {
    id: MERCHANT_EVENTS_PATCH,
    why: 'every state change of a flow becomes a signed merchant event, handed to its events-<flow_id> delivery workflow',
    addedIn: '0.1.0 (35c10a2, 2026-11-23)',
    deprecateWhen: 'no swap or link started before 35c10a2 is open (links live up to LINK_LIFETIME_SECONDS + grace; needs_reconciliation until resolved)',
  },
  {
    id: RESOLVE_PATCH,
    why: 'a flow in needs_reconciliation stays open until an operator resolves it (resolve update, audit record)',
    addedIn: '0.1.0 (f222e3e, 2026-11-23)',
    deprecateWhen: 'no flow started before f222e3e is open, and none of them is left in needs_reconciliation',
  },
  {
    id: LATE_DOUBT_PATCH,
    why: 'a notification arriving while a closing flow hands over its last events, and putting it in needs_reconciliation (money for a link just cancelled), keeps the flow open for its resolution instead of completing it unresolvable',
    addedIn: '0.1.0 (late doubt, 2026-11-26)',
    deprecateWhen: 'no flow started before this release is open (links: LINK_LIFETIME_SECONDS + grace)',
  },
  {
    id: PROVIDER_GUARD_PATCH,
    why: 'a confirmation held by the provider guard (kill switch or open breaker) on every attempt until the window closed ends the swap expired, with nothing sent, instead of waiting for a notification as a doubt',
    addedIn: '0.1.0 (provider guard, 2026-11-26)',
    deprecateWhen: 'no swap started before the provider guard release is open (swaps live minutes: one release later)',
  },
  {
    id: GUARD_TRIAL_PATCH,
    why: 'a half-open breaker whose categories GET succeeded lets one real call of its class through as the trial (claimTrial update) and closes only on its answer (re-opens when it is ambiguous or unanswered in time), instead of closing on the GET',
    addedIn: '0.1.0 (breaker trial, 2026-11-26)',
    deprecateWhen: 'the provider guard workflow of every deployment continued as new on this release (it does every 1000 changes; or terminate-and-let-it-restart: its state is only the breakers and the pause)',
  },
  {
    id: GUARD_MEMO_PATCH,
    why: 'the provider guard upserts its view into its memo (provider_guard) at start and after every change, so workers and gateways read it by describe, with no worker answering a query',
    addedIn: '0.1.0 (guard memo, 2026-11-26)',
    deprecateWhen: 'the provider guard workflow of every deployment continued as new on this release',
  },
  {
    id: HELD_TIMEOUT_PATCH,
    why: 'a confirmation whose last heartbeat says every attempt was held by the provider guard, and which ends in a schedule-to-close timeout (its next held retry still waiting for a worker when the window closed), ends the swap expired, nothing sent, instead of in doubt',
    addedIn: '0.1.0 (breaker trial, 2026-11-26)',
    deprecateWhen: 'no swap started before this release is open (swaps live minutes: one release later)',
  },
  {
    id: EVENTS_MEMO_PATCH,
    why: "a flow upserts its merchant events (id, type, timestamp, allow-listed data) into its memo (mpf_events, encrypted by the payload codec) on each event, so GET /v1/events lists and reads them from visibility and describe with no worker and no replay",
    addedIn: '0.1.0 (events memo, 2026-11-28)',
    deprecateWhen: 'no swap or link started before this release is open (links: LINK_LIFETIME_SECONDS + grace; needs_reconciliation until resolved)',
  },
  {
    id: WEBHOOK_ENDPOINTS_PATCH,
    why: 'an events-<flow_id> delivery workflow asks the worker (eventTargets) which registered webhook endpoints take each event when it comes, and delivers it to each in a lane of its own, besides the configured endpoints',
    addedIn: '0.1.0 (webhook endpoints, 2026-11-28)',
    deprecateWhen: 'no delivery workflow started before this release is open (they retry for MERCHANT_WEBHOOK_RETRY_SECONDS, 3 days by default, or end idle after 7 days)',
  },
  {
    id: LEAN_EVENTS_PATCH,
    why: "a flow starts its events-<flow_id> delivery workflow only when an event has somewhere to go (a configured endpoint, or a registered one that takes it now: read with the first activity's answer, then by the eventTargets local activity at each later event until one does), instead of at its first event always; and it records this one patch instead of mpf-merchant-events-v1 and mpf-events-memo-v1, whose branches it takes (a marker and a TemporalChangeVersion upsert fewer per flow)",
    addedIn: '0.1.0 (lean events, 2026-11-28)',
    deprecateWhen: 'never on its own: it retires with mpf-merchant-events-v1 and mpf-events-memo-v1 (when no swap or link started before them is open), after which the outbox calls only this one',
  },
  {
    id: START_CARRIED_PATCH,
    why: "a flow whose start carried MpfFlowKind, MpfTxnRef and its first MpfState (typed search attributes; the starter sets them since this release) skips its first search-attribute upsert; a flow started without them (Temporal Web, the CLI, an older starter) upserts them as before. It records this one patch instead of mpf-lean-events-v1, whose branch it takes (and so those of the two that one stands for)",
    addedIn: '0.1.0 (start carried, 2026-11-29)',
    deprecateWhen: 'never on its own: it retires with mpf-lean-events-v1 and the two older events patches (when no swap or link started before them is open), after which the session calls only this one',
  },
  {
    id: FRESH_TARGETS_PATCH,
    why: "a swap's confirmSwap activity is asked for the event settings as its first activity is (which types the registered webhook endpoints take now), and a provider notification's signal carries the types its receiver (the gateway) read, cached as a worker's, so the event of the state either decides (confirmed, pin_rejected; paid, failed, needs_reconciliation) is dropped or handed over without the eventTargets local activity (a marker, an activation and its promises fewer per flow); a flow records this one patch instead of mpf-start-carried-v1, whose branch it takes (and so those of the patches that one stands for)",
    addedIn: '0.1.0 (fresh targets, 2026-11-29)',
    deprecateWhen: 'never on its own: it retires with mpf-start-carried-v1 and the patches that one stands for, after which the session calls only this one',
  },
  {
    id: START_MEMO_PATCH,
    why: "a flow does not upsert its empty events list (mpf_events) in its first workflow task: the starter carries it in the start memo since this release (a memo update and its visibility write fewer per flow). A flow started without it (Temporal Web, the CLI, an older starter) has no events list until its first event, and readers ask its events query meanwhile, as for a flow of a release before the events memo; an empty list whose flow is past its first state (a worker of such a release ran it) is not trusted either. It records this one patch instead of mpf-fresh-targets-v1, whose branch it takes (and so those of the patches that one stands for)",
    addedIn: '0.1.0 (start memo, 2026-11-29)',
    deprecateWhen: 'never on its own: it retires with mpf-fresh-targets-v1 and the patches that one stands for, after which the session calls only this one',
  },
];

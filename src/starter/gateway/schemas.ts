/**
 * The gateway's HTTP shapes as zod schemas: request bodies come from the typed client (so the
 * gateway and the client validate alike), responses are explicit allow-lists of the views' fields
 * (a field not listed here never leaves the gateway: no PIN, auth_token or token hash can leak
 * through a response). fastify-type-provider-zod turns them into validation and the OpenAPI doc.
 */
import { z } from 'zod';
import { LinkCreateBody as LinkCreateInput, PinBody as PinInput, SwapStartBody as SwapStartInput } from '../client/mpf-client';
import { EXAMPLES } from './openapi-examples';
import { LINK_STATES, type LinkView, SWAP_STATES, type SwapView } from '../../workflows/messages';
import type { TimelineEntry, Viewed } from '../client/mpf-client';
import { FlowEventsField } from './event-schemas';
// The audit record of a resolution is the one the merchant events carry (written once, in the contract).
import { ReconciliationSchema } from '../../contract/merchant-event-schemas';

// States: the workflows' one lists (workflows/messages.ts)
// ---------------------------------------------------------------------------------------------

export const SwapStateSchema = z.enum(SWAP_STATES);
export const LinkStateSchema = z.enum(LINK_STATES);

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

/** The typed client's own schemas (the gateway and the client validate alike), named and with examples. */
export const SwapStartBody = SwapStartInput.meta({ id: 'SwapStartRequest', examples: [EXAMPLES.swapStart] });
export const LinkCreateBody = LinkCreateInput.meta({ id: 'PaymentLinkCreateRequest', examples: [EXAMPLES.linkCreate] });
export const PinBody = PinInput.meta({ id: 'PinRequest', examples: [{ wallet_pin: '••••' }] });

export const SwapIdParams = z.object({ swap_id: z.string().describe('the swap id, swap-<txn_ref>') });
export const LinkIdParams = z.object({ link_id: z.string().describe('the payment link id, paylink-<txn_merchant_ref>') });
export const NotificationParams = z.object({
  kind: z.string().describe('swap or paylink'),
  flow_id: z.string().describe('the flow the notification URL was made for'),
  token: z.string().describe('the per-flow secret token of the notification URL'),
});
export const CancelBody = z
  .object({ reason: z.string().max(200, 'must be at most 200 characters').optional() })
  .nullish()
  .describe('optional reason, kept in the flow');

// ---------------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------------

export const ErrorBody = z
  .object({
    error: z.string().describe('machine-readable error code'),
    message: z.string(),
    field: z.string().optional().describe('the request field at fault (400 invalid_request)'),
  })
  .meta({ id: 'Error', examples: [EXAMPLES.error] });

export const PendingBody = z
  .object({
    error: z.literal('pending'),
    message: z.string(),
    flow_id: z.string().describe('the flow was started (or sent the PIN) and goes on when a worker polls; look it up by this id'),
  })
  .meta({ id: 'Pending', examples: [EXAMPLES.pending] });

/**
 * 503: `worker_unavailable` (no worker answered; flow_id and last_known_state),
 * `temporal_unavailable` (the Temporal frontend cannot be reached) or
 * `temporal_persistence_unavailable` (the frontend answers, its database does not), or
 * `api_keys_unavailable` (a key made through /v1/api_keys could not be checked: the gateway's
 * reading of them is out of date). All with Retry-After.
 */
export const WorkerUnavailableBody = z
  .object({
    error: z.enum(['worker_unavailable', 'temporal_unavailable', 'temporal_persistence_unavailable', 'pin_budget_unavailable', 'identity_provider_unavailable', 'api_keys_unavailable']),
    message: z.string(),
    flow_id: z.string().optional(),
    last_known_state: z.string().optional().describe('the last state the flow published (search attribute MpfState)'),
  })
  .meta({ id: 'Unavailable', examples: [EXAMPLES.unavailable] });

/** 409 to a payment notification for a flow that closed without being paid: the provider retries. */
export const FlowClosedBody = z
  .object({
    error: z.literal('flow_closed'),
    message: z.string(),
    flow_id: z.string(),
    state: z.string().optional().describe("the closed flow's last state"),
  })
  .meta({ id: 'FlowClosed' });

const ExecutionField = z
  .enum(['terminated', 'timed_out', 'failed', 'cancelled'])
  .optional()
  .describe(
    'present when the execution was closed from outside the flow (terminated or cancelled in Temporal, timed out): ' +
      'state is then the last state it reached and reason says what an operator must check',
  );

const NotificationRecordSchema = z
  .object({
    dedup_key: z.string(),
    received_at: z.string(),
    outcome: z.enum(['paid', 'failed', 'pending', 'unknown']),
    applied: z.boolean().describe('true when this notification moved the flow'),
    deliveries: z.number().int().describe('deliveries of the same notification (retries and duplicates)'),
    payload: z.unknown().describe('the payload as the provider sent it'),
  })
  .meta({ id: 'NotificationRecord' });

const TimelineEntrySchema = z
  .object({
    at: z.string().describe('when it happened (a provider call: when it was scheduled), ISO 8601'),
    kind: z.enum(['state', 'provider_call', 'notification', 'operator']),
    name: z
      .string()
      .describe("the state; the provider call's activity type (initSwap, confirmSwap, createPaymentLink); notification; the operator's act (cancel, resolve, terminate, cancel_request)"),
    outcome: z.string().optional().describe("a provider call's: completed, failed, timed_out, cancelled, pending; a notification's outcome; a resolve's"),
    detail: z.string().optional().describe("the event a state emitted, a failed call's failure type (never its message), who resolved, a termination's reason"),
    attempt: z.number().int().optional().describe("a provider call's last attempt (1: not retried)"),
    ended_at: z.string().optional().describe('when a provider call ended'),
  })
  .meta({ id: 'TimelineEntry' });

const TimelineField = z
  .array(TimelineEntrySchema)
  .optional()
  .describe(
    "the flow's timeline, oldest first (only in GET of one flow): its states (from the events in its memo, and the steps that emit none from its history), " +
      'each provider call with its outcome, the notifications it recorded and the operator acts; read from the server with no worker, never a PIN or auth_token',
  );

export const SwapViewSchema = z
  .object({
    swap_id: z.string(),
    state: SwapStateSchema,
    txn_ref: z.string(),
    user_ref: z.string(),
    payment_ref: z.string().optional(),
    from_currency: z.string(),
    to_currency: z.string(),
    amount: z.number(),
    converted_amount: z.number().optional(),
    rate_used: z.number().optional(),
    expires_in_seconds: z.number().optional(),
    expires_at: z.string().optional().describe('no confirmation is attempted after this time'),
    pin_attempts_used: z.number().int(),
    pin_attempts_left: z.number().int(),
    reason: z.string().optional(),
    provider_message: z.string().optional(),
    notifications: z.array(NotificationRecordSchema),
    reconciliation: ReconciliationSchema.optional(),
    events: FlowEventsField,
    updated_at: z.string(),
    execution: ExecutionField,
    timeline: TimelineField,
  })
  .meta({ id: 'SwapView', examples: [EXAMPLES.swapView] });

export const StartedSwapSchema = SwapViewSchema.extend({
  pin_url: z.string().describe("the PIN-entry page for the user; the pin_token travels in the URL's fragment"),
  pin_token: z.string().describe('authorises POST /v1/swaps/{swap_id}/pin for this swap only'),
}).meta({ id: 'StartedSwap', examples: [EXAMPLES.startedSwap] });

/** What the PIN page may show: amounts, rate, expiry, state and attempts left; nothing else. */
export const SwapSummarySchema = z
  .object({
    swap_id: z.string(),
    state: SwapStateSchema,
    from_currency: z.string(),
    to_currency: z.string(),
    amount: z.number(),
    converted_amount: z.number().optional(),
    rate_used: z.number().optional(),
    expires_at: z.string().optional(),
    seconds_left: z.number().int().optional().describe("seconds until expires_at by the gateway's clock"),
    pin_attempts_left: z.number().int(),
  })
  .meta({ id: 'SwapSummary' });

export const PinOutcomeSchema = z
  .object({
    outcome: z.enum(['confirmed', 'pin_rejected', 'expired', 'failed', 'cancelled', 'needs_reconciliation']),
    state: SwapStateSchema,
    attempts_left: z.number().int().optional().describe('with pin_rejected: PINs the user may still try'),
  })
  .describe("the outcome of this PIN (the workflow's reason stays with the backend's GET /v1/swaps/{swap_id})")
  .meta({ id: 'PinOutcome', examples: [EXAMPLES.pinOutcome] });

export const LinkViewSchema = z
  .object({
    link_id: z.string(),
    state: LinkStateSchema,
    txn_merchant_ref: z.string(),
    user_ref: z.string(),
    amount: z.number(),
    currency: z.string(),
    payment_ref: z.string().optional(),
    pay_link: z.string().optional(),
    redirect_url: z.string(),
    expires_at: z.string().optional(),
    reason: z.string().optional(),
    notifications: z.array(NotificationRecordSchema),
    reconciliation: ReconciliationSchema.optional(),
    events: FlowEventsField,
    updated_at: z.string(),
    execution: ExecutionField,
    timeline: TimelineField,
  })
  .meta({ id: 'LinkView', examples: [EXAMPLES.linkView] });

export const DuplicateSwapBody = z.object({ error: z.literal('duplicate'), message: z.string(), swap: SwapViewSchema.optional() });
export const DuplicateLinkBody = z.object({ error: z.literal('duplicate'), message: z.string(), link: LinkViewSchema.optional() });
export const ProviderFailedSwapBody = z.object({ error: z.literal('provider_failed'), message: z.string(), swap: SwapViewSchema });
export const ProviderFailedLinkBody = z.object({ error: z.literal('provider_failed'), message: z.string(), link: LinkViewSchema });
const closedBeforeAnswer = { error: z.literal('flow_closed'), message: z.string().describe('closed in Temporal (terminated, timed out) before it answered; the view says how it ended') };
export const FlowClosedSwapBody = z.object({ ...closedBeforeAnswer, swap: SwapViewSchema });
export const FlowClosedLinkBody = z.object({ ...closedBeforeAnswer, link: LinkViewSchema });
export const NotCancellableSwapBody = z.object({ error: z.literal('not_cancellable'), message: z.string(), swap: SwapViewSchema });
export const NotCancellableLinkBody = z.object({ error: z.literal('not_cancellable'), message: z.string(), link: LinkViewSchema });

const CategorySchema = z.object({ code: z.string(), name: z.string() });
export const CategoriesResponse = z
  .object({
    categories: z.array(CategorySchema).describe("the provider's flat list, as received"),
    tree: z.object({
      parents: z.array(CategorySchema.extend({ children: z.array(CategorySchema) })),
      orphans: z.array(CategorySchema).describe('sub-categories whose parent is not in the list'),
    }),
  })
  .meta({ id: 'Categories' });

export const NotificationAck = z.object({
  received: z.literal(true),
  applied: z.boolean().optional().describe('false when the flow had already ended: the delivery changed nothing'),
  duplicate: z
    .boolean()
    .optional()
    .describe('true when this gateway process already handed this notification (same id or body) to the flow: not signalled again'),
});

// ---------------------------------------------------------------------------------------------
// The views' schemas against the workflows' view types: a field added to one and not the other
// breaks the build here, instead of silently vanishing from HTTP answers. (`execution` is the
// client's addition to every view; `timeline` its addition to the single view's answer.)
// ---------------------------------------------------------------------------------------------

type SameFields<View, Schema> = [Exclude<keyof View, keyof Schema>, Exclude<keyof Schema, keyof View>] extends [never, never]
  ? true
  : { only_in_the_view_type: Exclude<keyof View, keyof Schema>; only_in_the_schema: Exclude<keyof Schema, keyof View> };
const _swapViewFields: SameFields<Viewed<SwapView> & { timeline?: TimelineEntry[] }, z.infer<typeof SwapViewSchema>> = true;
const _linkViewFields: SameFields<Viewed<LinkView> & { timeline?: TimelineEntry[] }, z.infer<typeof LinkViewSchema>> = true;
const _swapViewTypes: z.infer<typeof SwapViewSchema> extends Viewed<SwapView> ? true : never = true;
const _linkViewTypes: z.infer<typeof LinkViewSchema> extends Viewed<LinkView> ? true : never = true;
void [_swapViewFields, _linkViewFields, _swapViewTypes, _linkViewTypes];

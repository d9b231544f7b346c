/**
 * The merchant events as zod schemas: every event type this version emits (EVENT_TYPES) and the
 * payload it carries, written once. The gateway's OpenAPI document lists them under `webhooks`
 * (so openapi-typescript types them for the light client, `@merchant-payment-flows/client`), and
 * the tests validate every event the workflows emit against them.
 *
 * Not for the workflow bundle (zod stays out of it): the workflows build events with the zod-free
 * merchant-events.ts, whose allow-list (EVENT_DATA_FIELDS) must equal the fields typed here — a
 * field added to one and not the other breaks the build below.
 *
 * `data.state` is the state the flow moved to (`swap.pin_rejected`: back in `awaiting_pin`),
 * `data.previous_state` the state it left. A receiver should ignore fields a later version adds.
 */
import { z } from 'zod';
import type { FlowKind } from './flow-kinds';
import { type EVENT_DATA_FIELDS, EVENT_PREFIX, EVENT_TYPE_OF_STATE, EVENT_TYPES, PROVIDER_EVENT_TYPES } from './merchant-events';

/** The states of a flow kind, in the table's order (the table lists every state, `null` or not). */
const statesOf = (kind: FlowKind): [string, ...string[]] => Object.keys(EVENT_TYPE_OF_STATE[kind]) as [string, ...string[]];

/** The audit record of an operator's resolution (also the gateway's `reconciliation` in a flow's view). */
export const ReconciliationSchema = z
  .object({
    outcome: z.string().describe('what the operator found at the provider: confirmed | failed (swap), paid | failed (payment link)'),
    provider_reference: z.string().describe("the provider's reference the operator checked out of band"),
    operator: z.string().describe('who resolved it'),
    note: z.string(),
    resolved_at: z.string(),
    reason_before: z.string().optional().describe('why the flow needed reconciliation'),
  })
  .describe('the audit record of the resolution (state reconciled)')
  .meta({ id: 'Reconciliation' });

export const SwapEventDataSchema = z
  .object({
    object: z.literal('swap'),
    swap_id: z.string(),
    state: z.enum(statesOf('swap')).describe('the state the swap moved to'),
    previous_state: z.enum(statesOf('swap')).describe('the state it left'),
    txn_ref: z.string(),
    user_ref: z.string(),
    payment_ref: z.string().optional().describe("the provider's reference, once it initialised the swap"),
    from_currency: z.string(),
    to_currency: z.string(),
    amount: z.number(),
    converted_amount: z.number().optional(),
    rate_used: z.number().optional(),
    expires_at: z.string().optional().describe('no confirmation is attempted after this time'),
    pin_attempts_used: z.number().int(),
    pin_attempts_left: z.number().int(),
    reason: z.string().optional().describe('why the swap ended failed, expired, cancelled, terminated or needs_reconciliation'),
    reconciliation: ReconciliationSchema.optional(),
  })
  .describe("the swap's allow-listed fields (never a PIN, token or secret)")
  .meta({ id: 'SwapEventData' });

export const PaymentLinkEventDataSchema = z
  .object({
    object: z.literal('payment_link'),
    link_id: z.string(),
    state: z.enum(statesOf('payment_link')).describe('the state the payment link moved to'),
    previous_state: z.enum(statesOf('payment_link')).describe('the state it left'),
    txn_merchant_ref: z.string(),
    user_ref: z.string(),
    amount: z.number(),
    currency: z.string(),
    payment_ref: z.string().optional(),
    pay_link: z.string().optional().describe('where the customer pays'),
    redirect_url: z.string(),
    expires_at: z.string().optional(),
    reason: z.string().optional().describe('why the link ended failed, expired, cancelled, terminated or needs_reconciliation'),
    reconciliation: ReconciliationSchema.optional(),
  })
  .describe("the payment link's allow-listed fields (never a token or secret)")
  .meta({ id: 'PaymentLinkEventData' });

const DATA_SCHEMA = { swap: SwapEventDataSchema, payment_link: PaymentLinkEventDataSchema } as const;

/** The provider guard's events: a breaker that opened or closed, a pause or a resume (no flow). */
export const ProviderGuardEventDataSchema = z
  .object({
    object: z.literal('provider_guard'),
    class: z.enum(['initiate', 'confirm', 'create']).optional().describe('the breaker: initiate (swap starts), confirm (swap confirmations), create (payment links)'),
    state: z.enum(['open', 'closed', 'paused', 'resumed']).describe('what it is now'),
    reason: z.string().optional().describe('why a breaker opened, or why an operator paused'),
    by: z.string().optional().describe('the operator (API key id) who paused or resumed'),
    probe_at: z.string().optional().describe('when an open breaker probes the provider'),
  })
  .describe('the deployment-wide guard in front of the provider: while a breaker is open or a pause holds, new swaps or links of that class are refused (503 provider_unavailable) and confirmations wait')
  .meta({ id: 'ProviderGuardEventData' });

const PROVIDER_EVENT_STATE: Readonly<Record<string, 'open' | 'closed' | 'paused' | 'resumed'>> = {
  'provider.breaker_opened': 'open',
  'provider.breaker_closed': 'closed',
  'provider.paused': 'paused',
  'provider.resumed': 'resumed',
};

function providerEventSchema(type: string) {
  return z
    .object({
      id: z.string().describe('stable and unique, evt_provider-guard-<task queue>_<n>; also the webhook-id header: de-duplicate on it'),
      type: z.literal(type),
      timestamp: z.string().describe('when it happened, ISO 8601'),
      data: z.intersection(ProviderGuardEventDataSchema, z.object({ state: z.literal(PROVIDER_EVENT_STATE[type]!) })),
    })
    .describe(EVENT_SUMMARIES[type] ?? type)
    .meta({ id: eventSchemaId(type) });
}

/** What each event type tells the merchant (the OpenAPI webhooks' summaries). */
export const EVENT_SUMMARIES: Readonly<Record<string, string>> = {
  'swap.awaiting_pin': 'The provider initialised the swap: the user can enter the PIN',
  'swap.pin_rejected': 'The provider rejected a PIN: the swap awaits another (pin_attempts_left)',
  'swap.confirmed': 'The provider confirmed the swap: the money moved',
  'swap.expired': 'The swap expired before it was confirmed: nothing moved',
  'swap.failed': 'The swap failed: nothing moved (reason says why)',
  'swap.cancelled': 'The swap was cancelled before it was confirmed: nothing moved',
  'swap.needs_reconciliation': 'Money may have moved and nothing settled it: an operator must check',
  'swap.reconciled': 'An operator resolved the swap (reconciliation says how)',
  'swap.terminated': 'The swap was closed in Temporal from outside before a confirmation was sent: nothing moved',
  'payment_link.created': 'The provider created the link: the customer can pay at pay_link',
  'payment_link.paid': 'The customer paid the link',
  'payment_link.failed': 'The payment link failed (reason says why)',
  'payment_link.expired': 'The payment link expired unpaid',
  'payment_link.cancelled': 'The payment link was cancelled unpaid',
  'payment_link.needs_reconciliation': 'A payment may have arrived and nothing settled it: an operator must check',
  'payment_link.reconciled': 'An operator resolved the payment link (reconciliation says how)',
  'payment_link.terminated': 'The payment link was closed in Temporal from outside before the customer got pay_link: nothing moved',
  'provider.breaker_opened': 'A provider breaker opened: no call of its class is sent until its probe succeeds',
  'provider.breaker_closed': 'A provider breaker closed: its calls go again',
  'provider.paused': 'An operator paused every money-moving call to the provider',
  'provider.resumed': 'An operator resumed money-moving calls to the provider',
};

/** `swap.pin_rejected` -> SwapPinRejectedEvent: the event's schema id in the OpenAPI document. */
export function eventSchemaId(type: string): string {
  const pascal = type
    .split(/[._]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
  return `${pascal}Event`;
}

function kindOf(type: string): FlowKind {
  const kind = (Object.keys(EVENT_PREFIX) as FlowKind[]).find((k) => type.startsWith(`${EVENT_PREFIX[k]}.`));
  if (!kind) throw new Error(`event type ${type} names no flow kind`);
  return kind;
}

/**
 * What an event of `type` says about the move beyond its kind's data: the state moved to (from the
 * one table) and, for the two rules of eventTypeFor, the state left.
 */
function moveOf(type: string): { state: string; previous?: string } {
  const kind = kindOf(type);
  if (type === `${EVENT_PREFIX[kind]}.reconciled`) return { state: 'reconciled', previous: 'needs_reconciliation' };
  if (type === 'swap.pin_rejected') return { state: 'awaiting_pin', previous: 'confirming' };
  const state = Object.entries(EVENT_TYPE_OF_STATE[kind]).find(([, t]) => t === type)?.[0];
  if (!state) throw new Error(`event type ${type} is in no row of EVENT_TYPE_OF_STATE`);
  return { state };
}

function eventSchema(type: string) {
  const kind = kindOf(type);
  const move = moveOf(type);
  // The kind's data (one schema in the document) and what this type adds to it.
  const data = z.intersection(
    DATA_SCHEMA[kind],
    z.object({
      state: z.literal(move.state),
      ...(move.previous ? { previous_state: z.literal(move.previous) } : {}),
      ...(move.state === 'reconciled' ? { reconciliation: ReconciliationSchema } : {}),
    }),
  );
  return z
    .object({
      id: z.string().describe('stable and unique, evt_<flow_id>_<n>; also the webhook-id header: de-duplicate on it'),
      type: z.literal(type),
      timestamp: z.string().describe('when the state changed, ISO 8601'),
      data,
    })
    .describe(EVENT_SUMMARIES[type] ?? type)
    .meta({ id: eventSchemaId(type) });
}

/** Every event type's schema, by type. */
export const MERCHANT_EVENT_SCHEMAS: Readonly<Record<string, z.ZodType>> = Object.fromEntries(
  EVENT_TYPES.map((t) => [t, (PROVIDER_EVENT_TYPES as readonly string[]).includes(t) ? providerEventSchema(t) : eventSchema(t)]),
);

/** Any event this version emits, by its `type`. */
export const MerchantEventSchema = z.discriminatedUnion(
  'type',
  EVENT_TYPES.map((t) => MERCHANT_EVENT_SCHEMAS[t] as z.ZodObject<{ type: z.ZodLiteral<string> }>) as unknown as [
    z.ZodObject<{ type: z.ZodLiteral<string> }>,
    ...z.ZodObject<{ type: z.ZodLiteral<string> }>[],
  ],
);

/** The issues of `event` against its type's schema ("path: message"), none when it validates; an unknown type is one issue. */
export function eventSchemaIssues(event: unknown): string[] {
  const type = (event as { type?: unknown } | null)?.type;
  const schema = typeof type === 'string' ? MERCHANT_EVENT_SCHEMAS[type] : undefined;
  if (!schema) return [`type: ${String(type)} is not an event type of this version`];
  const r = schema.safeParse(event);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.') || '(event)'}: ${i.message}`);
}

export type SwapEventData = z.infer<typeof SwapEventDataSchema>;
export type PaymentLinkEventData = z.infer<typeof PaymentLinkEventDataSchema>;
export type ProviderGuardEventData = z.infer<typeof ProviderGuardEventDataSchema>;
export type EventReconciliation = z.infer<typeof ReconciliationSchema>;

// The schemas type exactly the allow-listed fields of merchant-events.ts (plus `object` and
// `previous_state`): a field added to one and not the other breaks the build here.
type SameKeys<A extends PropertyKey, B extends PropertyKey> = [Exclude<A, B>, Exclude<B, A>] extends [never, never] ? true : { only_in_the_schema: Exclude<A, B>; only_in_the_allow_list: Exclude<B, A> };
const _swapFields: SameKeys<keyof SwapEventData, (typeof EVENT_DATA_FIELDS.swap)[number] | 'object' | 'previous_state'> = true;
const _linkFields: SameKeys<keyof PaymentLinkEventData, (typeof EVENT_DATA_FIELDS.payment_link)[number] | 'object' | 'previous_state'> = true;
void [_swapFields, _linkFields];

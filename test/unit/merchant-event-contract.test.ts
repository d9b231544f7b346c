/**
 * The merchant events as a contract: every event type has its zod schema (src/contract/
 * merchant-event-schemas.ts), an event built by eventData() from a flow's view for every state
 * change of both flow kinds validates against its type's schema (and a wrong one does not), and
 * verifyEvent of the light client accepts exactly what signing.ts signs. Events of real flows are
 * validated in test/flows/merchant-events.test.ts; the `webhooks` of the OpenAPI document in
 * test/unit/openapi.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EVENT_SUMMARIES, eventSchemaIssues, MERCHANT_EVENT_SCHEMAS, MerchantEventSchema } from '../../src/contract/merchant-event-schemas';
import { EVENT_TYPE_OF_STATE, EVENT_TYPES, eventData, eventId, eventTypeFor, FLOW_EVENT_TYPES, type FlowEvent, PROVIDER_EVENT_TYPES } from '../../src/contract/merchant-events';
import type { FlowKind } from '../../src/contract/flow-kinds';
import { generateSecret, signatureHeaders, verifyDelivery } from '../../src/merchant-events/signing';
import { type MerchantEvent, MpfSignatureVerificationError, verifyEvent } from '../../src/http-client';
import { LINK_STATES, type LinkView, SWAP_STATES, type SwapView } from '../../src/workflows/messages';

const reconciliation = { outcome: 'confirmed', provider_reference: 'SWP-7f3a9c', operator: 'key ops (operator)', note: 'converted at the provider', resolved_at: '2026-01-15T11:00:00.000Z', reason_before: 'no notification settled it' };

/** Views as the workflows answer them, every optional field set (eventData keeps the allow-listed ones). */
const SWAP_VIEW: SwapView = {
  swap_id: 'swap-order-1001',
  state: 'awaiting_pin',
  txn_ref: 'order-1001',
  user_ref: 'user-42',
  payment_ref: 'SWP-7f3a9c',
  from_currency: 'USD',
  to_currency: 'NGN',
  amount: 100,
  converted_amount: 150025,
  rate_used: 1500.25,
  expires_in_seconds: 300,
  expires_at: '2026-01-15T10:05:00.000Z',
  pin_attempts_used: 1,
  pin_attempts_left: 2,
  reason: 'a reason',
  provider_message: 'from the provider',
  notifications: [],
  events: [{ id: 'evt_swap-order-1001_1', type: 'swap.awaiting_pin', timestamp: '2026-01-15T10:00:00.000Z' }],
  updated_at: '2026-01-15T10:00:00.412Z',
};
const LINK_VIEW: LinkView = {
  link_id: 'paylink-invoice-2001',
  state: 'awaiting_payment',
  txn_merchant_ref: 'invoice-2001',
  user_ref: 'user-42',
  amount: 25000,
  currency: 'NGN',
  payment_ref: 'PL-19d2e0',
  pay_link: 'http://127.0.0.1:9/pay?payment_ref=PL-19d2e0',
  redirect_url: 'http://127.0.0.1:9/orders/2001/return',
  expires_at: '2026-01-16T10:00:00.000Z',
  reason: 'a reason',
  notifications: [],
  updated_at: '2026-01-15T10:00:00.388Z',
};
const VIEWS: Record<FlowKind, Record<string, unknown>> = { swap: { ...SWAP_VIEW }, payment_link: { ...LINK_VIEW } };

/** The event the workflows' outbox builds for a move of a flow of `kind` from `from` to `to`. */
function eventOf(kind: FlowKind, from: string, to: string): FlowEvent | undefined {
  const type = eventTypeFor(kind, from, to);
  if (!type) return undefined;
  const view: Record<string, unknown> = { ...VIEWS[kind], state: to, reconciliation: to === 'reconciled' ? reconciliation : undefined };
  return { id: eventId(String(view.swap_id ?? view.link_id), 1), type, timestamp: '2026-01-15T10:00:01.000Z', data: eventData(kind, view, from) };
}

describe('the event schemas', () => {
  test("the event table lists every state of both flows (the schemas' state enums come from it)", () => {
    assert.deepEqual(Object.keys(EVENT_TYPE_OF_STATE.swap).sort(), [...SWAP_STATES].sort());
    assert.deepEqual(Object.keys(EVENT_TYPE_OF_STATE.payment_link).sort(), [...LINK_STATES].sort());
  });

  test('every event type has a schema and a summary, and nothing else has one', () => {
    assert.equal(FLOW_EVENT_TYPES.length, 17);
    assert.equal(EVENT_TYPES.length, 17 + PROVIDER_EVENT_TYPES.length);
    assert.deepEqual(Object.keys(MERCHANT_EVENT_SCHEMAS).sort(), [...EVENT_TYPES].sort());
    assert.deepEqual(Object.keys(EVENT_SUMMARIES).sort(), [...EVENT_TYPES].sort());
  });

  test('an event built by eventData() for every state change of both flow kinds validates against its type, and every flow type is reached', () => {
    const reached = new Set<string>();
    for (const kind of ['swap', 'payment_link'] as const) {
      const states = kind === 'swap' ? SWAP_STATES : LINK_STATES;
      for (const from of states) {
        for (const to of states) {
          // needs_reconciliation is left only by an operator's resolution, and reconciled reached only
          // by it (FlowSession.validateResolve and resolve).
          if ((from === 'needs_reconciliation') !== (to === 'reconciled')) continue;
          const event = eventOf(kind, from, to);
          if (!event) continue;
          reached.add(event.type);
          assert.deepEqual(eventSchemaIssues(event), [], `${kind} ${from} -> ${to} (${event.type})`);
          assert.ok(MerchantEventSchema.safeParse(event).success, `${event.type} by the union`);
        }
      }
    }
    assert.deepEqual([...reached].sort(), [...FLOW_EVENT_TYPES].sort());
  });

  test('a wrong event fails its schema: a missing field, another state, a reconciled event without its record, an unknown type', () => {
    const confirmed = eventOf('swap', 'confirming', 'confirmed')!;
    const { swap_id: _gone, ...withoutId } = confirmed.data;
    assert.match(eventSchemaIssues({ ...confirmed, data: withoutId }).join(), /^data\.swap_id: /);
    assert.match(eventSchemaIssues({ ...confirmed, data: { ...confirmed.data, state: 'failed' } }).join(), /^data\.state: /);
    assert.match(eventSchemaIssues({ ...confirmed, data: { ...confirmed.data, amount: '100' } }).join(), /^data\.amount: /);
    const reconciled = eventOf('payment_link', 'needs_reconciliation', 'reconciled')!;
    const { reconciliation: _record, ...unrecorded } = reconciled.data;
    assert.match(eventSchemaIssues({ ...reconciled, data: unrecorded }).join(), /^data\.reconciliation: /);
    assert.match(eventSchemaIssues({ ...confirmed, data: { ...confirmed.data, object: 'payment_link' } }).join(), /^data\.object: /);
    assert.deepEqual(eventSchemaIssues({ ...confirmed, type: 'swap.refunded' }), ['type: swap.refunded is not an event type of this version']);
  });
});

describe('verifyEvent (the light client) against what signing.ts signs', () => {
  const secret = generateSecret();
  const event = eventOf('swap', 'confirming', 'confirmed')!;
  const body = JSON.stringify(event);
  const failure = (fn: () => unknown): string => {
    try {
      fn();
    } catch (err) {
      assert.ok(err instanceof MpfSignatureVerificationError, String(err));
      assert.equal(err.code, 'signature_verification_failed');
      return err.reason;
    }
    return 'accepted';
  };

  test('answers the typed event of a signed delivery, from a string or bytes, with Node or fetch headers', () => {
    const headers = signatureHeaders([secret], event.id, new Date(), body);
    const verified: MerchantEvent = verifyEvent(body, headers, secret);
    assert.deepEqual(verified, event);
    assert.deepEqual(verifyEvent(Buffer.from(body), new Headers(headers), secret), event);
    assert.deepEqual(verifyEvent(new TextEncoder().encode(body), Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v])), secret), event);
    assert.deepEqual(verifyDelivery([secret], body, headers), event, 'the standardwebhooks package agrees');
    if (verified.type === 'swap.confirmed') {
      const state: 'confirmed' = verified.data.state;
      assert.equal(state, 'confirmed');
      // @ts-expect-error a swap.confirmed event's state is confirmed
      const wrong: 'failed' = verified.data.state;
      void wrong;
    } else assert.fail(verified.type);
  });

  test('accepts any of several secrets, as during a rotation (signed with the new and the old)', () => {
    const [fresh, old, other] = [generateSecret(), secret, generateSecret()];
    const headers = signatureHeaders([fresh, old], event.id, new Date(), body);
    assert.equal(verifyEvent(body, headers, old).id, event.id);
    assert.equal(verifyEvent(body, headers, [other, fresh]).id, event.id);
    assert.equal(failure(() => verifyEvent(body, headers, other)), 'no_matching_signature');
  });

  test('refuses a changed body, another secret, a stale or future timestamp, a missing header, a bad secret and a signed body that is no event', () => {
    const now = new Date();
    const headers = signatureHeaders([secret], event.id, now, body);
    assert.equal(failure(() => verifyEvent(body.replace('"amount":100', '"amount":1000'), headers, secret)), 'no_matching_signature');
    assert.equal(failure(() => verifyEvent(body, { ...headers, 'webhook-id': 'evt_other_1' }, secret)), 'no_matching_signature');
    assert.equal(failure(() => verifyEvent(body, headers, generateSecret())), 'no_matching_signature');
    const stale = new Date(now.getTime() - 6 * 60_000);
    assert.equal(failure(() => verifyEvent(body, signatureHeaders([secret], event.id, stale, body), secret)), 'timestamp_out_of_tolerance');
    assert.equal(failure(() => verifyEvent(body, signatureHeaders([secret], event.id, new Date(now.getTime() + 6 * 60_000), body), secret)), 'timestamp_out_of_tolerance');
    assert.equal(verifyEvent(body, signatureHeaders([secret], event.id, stale, body), secret, { toleranceSeconds: 600 }).id, event.id, 'within a wider tolerance');
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const { [name]: _dropped, ...rest } = headers;
      assert.equal(failure(() => verifyEvent(body, rest, secret)), 'missing_header', name);
    }
    assert.equal(failure(() => verifyEvent(body, { ...headers, 'webhook-timestamp': 'soon' }, secret)), 'invalid_timestamp');
    assert.equal(failure(() => verifyEvent(body, headers, 'not a secret!')), 'invalid_secret');
    assert.equal(failure(() => verifyEvent(body, headers, [])), 'invalid_secret');
    for (const text of ['not json', '{"id":"evt_x_1","type":"swap.confirmed"}']) {
      assert.equal(failure(() => verifyEvent(text, signatureHeaders([secret], 'evt_x_1', now, text), secret)), 'invalid_body', text);
    }
  });
});

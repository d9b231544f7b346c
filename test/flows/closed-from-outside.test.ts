/**
 * Flows an operator terminates in Temporal (Temporal Web's Terminate button, `temporal workflow
 * terminate`): the break-glass act ends them truthfully. The view says so at once (`terminated`
 * where nothing that moves money was sent, `needs_reconciliation` where money may have moved); the
 * worker's sweeper carries each on in its next run, which sends the merchant its event within the
 * sweep interval plus the visibility store's lag (1 s here; the test allows 30 s on a loaded
 * machine), and a flow in doubt is resolved by an operator as any other. The simulator's ledger
 * says what really reached the provider.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NO_MERCHANT_EVENTS } from '../../src/merchant-events/config';
import { startEventListener, type RunningListener } from '../../src/merchant-events/listener';
import { generateSecret } from '../../src/merchant-events/signing';
import { linkBody, swapBody, uniqueRef } from '../helpers/fixtures';
import { type GatewayHarness, startGatewayStack } from '../helpers/gateway';
import { eventually } from '../helpers/stack';

const BOUND_MS = 30_000;

describe('a flow terminated in Temporal', () => {
  const secret = generateSecret();
  let h: GatewayHarness;
  let listener: RunningListener;
  before(async () => {
    listener = await startEventListener({ secrets: [secret] });
    h = await startGatewayStack({ events: { ...NO_MERCHANT_EVENTS, urls: [listener.url], secrets: [secret] }, closedFlowSweepMs: 1_000 });
  });
  after(async () => {
    await h?.stop();
    await listener?.close();
  });

  const eventOf = (flowId: string, type: string) =>
    eventually(async () => listener.deliveries.find((d) => d.verified && d.event?.type === type && d.body.includes(`"${flowId}"`)), BOUND_MS, `${type} of ${flowId} delivered`);

  test('ends truthfully with an event: a swap awaiting its PIN, a swap whose confirmation went into a hanging provider, a link awaiting payment', async () => {
    // A swap awaiting its PIN.
    const pinRef = uniqueRef('term-pin');
    const waiting = await h.api('POST', '/v1/swaps', swapBody(pinRef));
    assert.equal(waiting.status, 201, waiting.text);
    const waitingId = waiting.json.swap_id as string;

    // A swap whose confirmation reached a provider that never answers.
    const hangRef = uniqueRef('term-hang');
    await h.stack.control.setRefFaults(hangRef, [{ endpoint: 'swap.confirm', kind: 'hang', maxMs: 60_000 }]);
    const hanging = await h.api('POST', '/v1/swaps', swapBody(hangRef));
    assert.equal(hanging.status, 201, hanging.text);
    const hangingId = hanging.json.swap_id as string;
    await h.stack.mpf.submitPin(hangingId, { wallet_pin: '1234' }, { wait: false });
    await eventually(async () => (await h.stack.control.ledger({ ref: hangRef })).requests.some((r) => r.endpoint === 'swap.confirm'), 20_000, 'the confirmation reached the provider');

    // A link awaiting payment.
    const link = await h.api('POST', '/v1/payment-links', linkBody(uniqueRef('term-link')));
    assert.equal(link.status, 201, link.text);
    const linkId = link.json.link_id as string;

    for (const id of [waitingId, hangingId, linkId]) await h.stack.client.workflow.getHandle(id).terminate('break-glass: test');

    // The view is truthful at once, before any sweep.
    const now = {
      waiting: (await h.api('GET', `/v1/swaps/${waitingId}`)).json,
      hanging: (await h.api('GET', `/v1/swaps/${hangingId}`)).json,
      link: (await h.api('GET', `/v1/payment-links/${linkId}`)).json,
    };
    assert.deepEqual(
      [now.waiting.state, now.hanging.state, now.link.state, now.waiting.execution],
      ['terminated', 'needs_reconciliation', 'needs_reconciliation', 'terminated'],
      JSON.stringify(now),
    );
    assert.match(String(now.waiting.reason), /terminated in Temporal while awaiting_pin; no confirmation was sent: no money moved/);

    // Each gets its event, delivered like every other, within the bound.
    await eventOf(waitingId, 'swap.terminated');
    await eventOf(hangingId, 'swap.needs_reconciliation');
    await eventOf(linkId, 'payment_link.needs_reconciliation');

    // The carrying runs answer the same state, and list the earlier events too.
    const carried = (await h.api('GET', `/v1/swaps/${waitingId}`)).json as { state: string; events: Array<{ type: string }> };
    assert.equal(carried.state, 'terminated');
    assert.deepEqual(
      carried.events.map((e) => e.type),
      ['swap.awaiting_pin', 'swap.terminated'],
    );
    for (const id of [hangingId, linkId]) assert.equal((await h.stack.mpf.flowStatus(id))?.status, 'RUNNING', `${id} stays open for its resolution`);

    // Money paid on the terminated link's page still reaches the flow (its notification URL stays valid), never lost.
    await h.stack.control.completeLink(link.json.payment_ref as string);
    const paidLate = await eventually(async () => {
      const v = (await h.api('GET', `/v1/payment-links/${linkId}`)).json as { state: string; notifications: Array<{ outcome: string }> };
      return v.notifications.some((n) => n.outcome === 'paid') && v;
    }, BOUND_MS, `the payment notified to ${linkId}`);
    assert.equal(paidLate.state, 'needs_reconciliation');

    // The ledger agrees: nothing confirmed anywhere; the hanging confirmation was received, the waiting swap's never sent.
    const ledgerOf = (ref: string) => h.stack.control.ledger({ ref });
    const [pinLedger, hangLedger] = await Promise.all([ledgerOf(pinRef), ledgerOf(hangRef)]);
    assert.equal(pinLedger.requests.filter((r) => r.endpoint === 'swap.confirm').length, 0);
    assert.equal(pinLedger.effects.filter((e) => e.kind === 'swap.confirmed').length, 0);
    assert.equal(hangLedger.effects.filter((e) => e.kind === 'swap.confirmed').length, 0);

    // The doubt is resolved by an operator as any other, with its event.
    const resolved = await h.api('POST', `/v1/admin/flows/${hangingId}/resolve`, { outcome: 'failed', provider_reference: 'ledger-checked', note: 'the provider never applied it' });
    assert.equal(resolved.status, 200, resolved.text);
    assert.equal(resolved.json.state, 'reconciled');
    await eventOf(hangingId, 'swap.reconciled');

    // Lists show each flow once, in its truthful state.
    const listed = (await h.api('GET', '/v1/swaps?limit=100')).json as { items: Array<{ flow_id: string; state: string }> };
    const mine = listed.items.filter((i) => i.flow_id === waitingId || i.flow_id === hangingId);
    assert.deepEqual(mine.map((i) => `${i.flow_id}:${i.state}`).sort(), [`${hangingId}:reconciled`, `${waitingId}:terminated`].sort());
  });

  test('a cancel or PIN sent to a terminated swap is refused, naming its state', async () => {
    const started = await h.api('POST', '/v1/swaps', swapBody(uniqueRef('term-refuse')));
    assert.equal(started.status, 201, started.text);
    const id = started.json.swap_id as string;
    await h.stack.client.workflow.getHandle(id).terminate('break-glass: test');
    await eventOf(id, 'swap.terminated');
    const cancel = await h.api('POST', `/v1/swaps/${id}/cancel`, {});
    assert.equal(cancel.status, 409, cancel.text);
    assert.match(cancel.text, /terminated/);
  });
});

describe('a payment link terminated in Temporal while the provider creates it', () => {
  let h: GatewayHarness;
  before(async () => {
    h = await startGatewayStack({ closedFlowSweepMs: 1_000 });
  });
  after(async () => {
    await h?.stop();
  });

  test('answers its creator with a clear refusal, not a 500, and ends terminated: the customer never got pay_link', async () => {
    const ref = uniqueRef('term-creating');
    await h.stack.control.setRefFaults(ref, [{ endpoint: 'link.create', kind: 'latency', latencyMs: [4_000, 4_000] }]);
    const creating = h.api('POST', '/v1/payment-links', linkBody(ref));
    const linkId = `paylink-${ref}`;
    await eventually(async () => (await h.api('GET', `/v1/payment-links/${linkId}`)).json?.state === 'creating', 20_000, `${linkId} creating`);
    await h.stack.client.workflow.getHandle(linkId).terminate('break-glass: test');
    const answer = await creating;
    assert.equal(answer.status, 409, answer.text);
    assert.equal(answer.json.error, 'flow_closed');
    assert.equal((answer.json.link as { state: string }).state, 'terminated');
    const view = await eventually(async () => {
      const v = (await h.api('GET', `/v1/payment-links/${linkId}`)).json as { state: string; events?: Array<{ type: string }> };
      return v.events?.some((e) => e.type === 'payment_link.terminated') && v;
    }, BOUND_MS, `${linkId} carried on`);
    assert.equal(view.state, 'terminated');
  });
});

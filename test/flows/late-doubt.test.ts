/**
 * Money for a link just cancelled: the customer pays on the provider's page while the link is
 * closing (late-notification grace 0, as in `mpf demo`). The link moves to needs_reconciliation,
 * and it must stay open until an operator resolves it — never complete in needs_reconciliation,
 * where nobody could resolve it (found by `mpf events trigger payment_link.reconciled`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NO_MERCHANT_EVENTS } from '../../src/merchant-events/config';
import { startEventListener, type RunningListener } from '../../src/merchant-events/listener';
import { generateSecret } from '../../src/merchant-events/signing';
import { linkBody, uniqueRef } from '../helpers/fixtures';
import { type GatewayHarness, startGatewayStack } from '../helpers/gateway';
import { eventually } from '../helpers/stack';

describe('a payment that arrives while a cancelled link closes', () => {
  const secret = generateSecret();
  let h: GatewayHarness;
  let listener: RunningListener;
  before(async () => {
    listener = await startEventListener({ secrets: [secret] });
    // With an endpoint, the link's last step (handing its events over) takes a round trip: the window the payment lands in.
    h = await startGatewayStack({ events: { ...NO_MERCHANT_EVENTS, urls: [listener.url], secrets: [secret] }, client: { linkLateNotificationGraceSeconds: 0 } });
  });
  after(async () => {
    await h?.stop();
    await listener?.close();
  });

  test('leaves every such link either cancelled with the payment refused, or open in needs_reconciliation and resolvable', async () => {
    const ends: string[] = [];
    for (let i = 0; i < 6; i++) {
      const created = await h.api('POST', '/v1/payment-links', linkBody(uniqueRef('late-doubt')));
      assert.equal(created.status, 201, created.text);
      const linkId = created.json.link_id as string;
      const paymentRef = created.json.payment_ref as string;
      // The payment right after the cancel was answered: it lands while the link closes.
      const cancelled = await h.api('POST', `/v1/payment-links/${linkId}/cancel`, {});
      assert.equal(cancelled.status, 200, cancelled.text);
      await h.stack.control.completeLink(paymentRef);
      const final = await eventually(async () => {
        const v = (await h.api('GET', `/v1/payment-links/${linkId}`)).json as { state: string };
        const status = await h.stack.mpf.flowStatus(linkId);
        return (v.state === 'needs_reconciliation' || status?.status !== 'RUNNING') && { state: v.state, status: status?.status };
      }, 20_000, `${linkId} settles`);
      ends.push(`${final.state}/${final.status}`);
      if (final.state === 'needs_reconciliation') {
        assert.equal(final.status, 'RUNNING', `${linkId} completed in needs_reconciliation: nobody can resolve it`);
        const resolved = await h.api('POST', `/v1/admin/flows/${linkId}/resolve`, { outcome: 'paid', provider_reference: paymentRef, note: 'paid after the cancel; refunded' });
        assert.equal(resolved.status, 200, resolved.text);
        assert.equal(resolved.json.state, 'reconciled');
      }
    }
    // The run says which ends it saw (both are right; only a closed needs_reconciliation is wrong).
    console.log(`ends: ${ends.join(', ')}`);
  });
});

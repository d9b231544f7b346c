import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { type GatewayHarness, startGatewayStack, stopOwnTemporal } from '../helpers/gateway';
import type { SwapView } from '../../src/workflows/messages';

describe("the swap's provider notification", () => {
  let h: GatewayHarness;
  before(async () => {
    h = await startGatewayStack({ client: { swapNotificationWaitSeconds: 20 } });
  });
  after(async () => {
    await h?.stop();
    await stopOwnTemporal();
  });

  test('is awaited after confirmation (bounded) and recorded on the swap', async () => {
    const start = await h.api('POST', '/v1/swaps', swapBody(uniqueRef('notify')));
    assert.equal(start.status, 201, start.text);
    const pin = await h.call('POST', `/v1/swaps/${start.json.swap_id}/pin`, {
      headers: { authorization: `Bearer ${start.json.pin_token}` },
      body: { wallet_pin: SIM_PIN },
    });
    assert.equal(pin.json.outcome, 'confirmed');
    // The workflow finishes as soon as the simulator's notification reached the webhook.
    const final = (await h.stack.client.workflow.getHandle(start.json.swap_id).result()) as SwapView;
    assert.equal(final.state, 'confirmed');
    assert.equal(final.notifications.length, 1);
    assert.equal(final.notifications[0].outcome, 'paid');
    assert.equal((await h.stack.control.ledger()).effects.filter((e) => e.kind === 'notification.delivered').length, 1);
  });
});

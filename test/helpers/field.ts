/**
 * Both flows driven end to end the way a merchant's backend and its user drive them in the field:
 * through a gateway's HTTP API (API key, PIN page's Bearer pin_token), the customer paying at the
 * simulator's checkout, and the simulator's ledger as the proof of what the provider did.
 */
import assert from 'node:assert/strict';
import { createControlClient } from '../../src/simulator/control-client';
import { gatewayCaller } from './http';
import { linkBody, SIM_PIN, swapBody } from './fixtures';
import { eventually } from './stack';

export interface FieldTarget {
  /** The gateway's base URL, e.g. http://127.0.0.1:PORT. */
  gatewayUrl: string;
  apiKey: string;
  /** The simulator's base URL (its /_sim control API). */
  simulatorUrl: string;
}

const api = (t: FieldTarget, method: string, path: string, body?: unknown) => gatewayCaller(t.gatewayUrl, t.apiKey).api(method, path, body);

/** Starts a swap, sends the PIN, expects `confirmed`; checks the ledger: one init, one confirm. */
export async function swapToConfirmed(t: FieldTarget, txnRef: string): Promise<void> {
  const started = await api(t, 'POST', '/v1/swaps', swapBody(txnRef));
  assert.equal(started.status, 201, started.text);
  assert.equal(started.json.state, 'awaiting_pin');
  const outcome = await gatewayCaller(t.gatewayUrl).call('POST', `/v1/swaps/${started.json.swap_id}/pin`, {
    body: { wallet_pin: SIM_PIN },
    headers: { authorization: `Bearer ${started.json.pin_token}` },
  });
  assert.equal(outcome.status, 200, outcome.text);
  assert.deepEqual(outcome.json, { outcome: 'confirmed', state: 'confirmed' });
  const view = await api(t, 'GET', `/v1/swaps/${started.json.swap_id}`);
  assert.equal(view.json.state, 'confirmed', view.text);
  const ledger = await createControlClient(t.simulatorUrl).ledger({ ref: txnRef });
  assert.deepEqual(
    ledger.requests.map((r) => r.endpoint).sort(),
    ['swap.confirm', 'swap.init'],
    'the provider saw exactly one initialisation and one confirmation',
  );
  assert.ok(ledger.effects.some((e) => e.kind === 'swap.confirmed'), 'the provider confirmed the swap');
}

/** Creates a link, pays it at the simulator, expects the link to end `paid` (from the notification). */
export async function linkToPaid(t: FieldTarget, txnMerchantRef: string): Promise<void> {
  const created = await api(t, 'POST', '/v1/payment-links', linkBody(txnMerchantRef));
  assert.equal(created.status, 201, created.text);
  assert.equal(created.json.state, 'awaiting_payment');
  await createControlClient(t.simulatorUrl).completeLink(created.json.payment_ref);
  await eventually(
    async () => {
      const v = await api(t, 'GET', `/v1/payment-links/${created.json.link_id}`);
      return v.json?.state === 'paid' ? v : undefined;
    },
    60_000,
    `${created.json.link_id} paid`,
  );
  const ledger = await createControlClient(t.simulatorUrl).ledger({ ref: txnMerchantRef });
  assert.equal(ledger.requests.filter((r) => r.endpoint === 'link.create').length, 1, 'one link creation at the provider');
  assert.ok(ledger.effects.some((e) => e.kind === 'link.paid'), 'the provider recorded the payment');
}

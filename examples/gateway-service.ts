/**
 * A service that talks only to the gateway over HTTP (no Temporal access, no payload keys): the
 * typed client generated from the gateway's OpenAPI document (`merchant-payment-flows/http`,
 * openapi-fetch). Paths, bodies and answers are typed by the document.
 *
 *   GATEWAY_URL=http://127.0.0.1:8080 GATEWAY_API_KEY=… node dist/gateway-service.js <order-id>
 */
import { createGatewayClient, pinTokenHeaders, type SwapStartRequest } from 'merchant-payment-flows/http';

async function main(orderId: string): Promise<void> {
  const baseUrl = process.env.GATEWAY_URL ?? process.env.GATEWAY_PUBLIC_URL ?? 'http://127.0.0.1:8080';
  const gateway = createGatewayClient({ baseUrl, apiKey: process.env.GATEWAY_API_KEY });

  const body: SwapStartRequest = { user_ref: 'user-42', from_currency: 'USD', to_currency: 'NGN', amount: 25, txn_ref: orderId };
  const started = await gateway.POST('/v1/swaps', { body });
  if (!started.data) throw new Error(`POST /v1/swaps answered ${started.response.status}: ${JSON.stringify(started.error)}`);
  const swap = started.data;
  console.log(`swap ${swap.swap_id}: ${swap.state}; ${swap.amount} ${swap.from_currency} -> ${swap.converted_amount} ${swap.to_currency}`);

  const pin = process.env.EXAMPLE_WALLET_PIN;
  if (pin) {
    const outcome = await gateway.POST('/v1/swaps/{swap_id}/pin', {
      params: { path: { swap_id: swap.swap_id } },
      headers: pinTokenHeaders(swap.pin_token),
      body: { wallet_pin: pin },
    });
    console.log(`PIN outcome: ${outcome.data?.outcome ?? `HTTP ${outcome.response.status}`}`);
  }
  const view = await gateway.GET('/v1/swaps/{swap_id}', { params: { path: { swap_id: swap.swap_id } } });
  console.log(`swap ${swap.swap_id} is ${view.data?.state ?? `HTTP ${view.response.status}`}`);

  const again = await gateway.POST('/v1/swaps', { body });
  console.log(`a second start of ${orderId}: HTTP ${again.response.status} ${again.error && 'error' in again.error ? again.error.error : ''}`);
}

main(process.argv[2] ?? `order-${Date.now()}`).catch((err: unknown) => {
  console.error(err instanceof Error ? `${err.name}: ${err.message}` : err);
  process.exitCode = 1;
});

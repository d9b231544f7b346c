/**
 * A merchant's backend service using merchant-payment-flows as a library (the typed SDK): it talks
 * to Temporal directly, with the payload keys, and needs no gateway of its own for starting flows.
 * Configured from the environment like `mpf`: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
 * TEMPORAL_TASK_QUEUE, PAYLOAD_ENCRYPTION_KEYS, GATEWAY_PUBLIC_URL (the gateway users and the
 * provider reach: PIN page and notification URLs).
 *
 *   node dist/backend-service.js <order-id>      (after tsc; see README "Use from your service")
 *
 * EXAMPLE_WALLET_PIN, when set, is submitted as the user's PIN (a real service takes it from its own
 * PIN form, or sends the user to pin_url).
 */
import {
  DuplicateFlowError,
  InputError,
  loadEnv,
  mpfClientFromEnv,
  type LinkCreateRequest,
  type SwapStartRequest,
  type SwapView,
} from 'merchant-payment-flows';

async function main(orderId: string): Promise<void> {
  const mpf = await mpfClientFromEnv(loadEnv());
  try {
    // The request types are the contract's zod schemas, inferred: a missing or misspelt field does not compile.
    const swapRequest: SwapStartRequest = { user_ref: 'user-42', from_currency: 'USD', to_currency: 'NGN', amount: 25, txn_ref: orderId };
    const { swap, pin_url } = await mpf.startSwap(swapRequest);
    console.log(`swap ${swap.swap_id}: ${swap.state}; ${swap.amount} ${swap.from_currency} -> ${swap.converted_amount} ${swap.to_currency} at ${swap.rate_used}`);
    console.log(`send the user to the PIN page: ${pin_url.replace(/#.*/, '#token=…')}`);

    const pin = process.env.EXAMPLE_WALLET_PIN;
    if (pin) {
      const outcome = await mpf.submitPin(swap.swap_id, { wallet_pin: pin }); // sealed before it leaves this process
      console.log(`PIN outcome: ${outcome?.outcome}`);
    }
    const view: SwapView = await mpf.getSwap(swap.swap_id);
    console.log(`swap ${view.swap_id} is ${view.state}`);

    // Starting the same reference again never reaches the provider twice.
    try {
      await mpf.startSwap(swapRequest);
    } catch (err) {
      if (!(err instanceof DuplicateFlowError)) throw err;
      console.log(`a second start of ${orderId} is refused: ${err.message}`);
    }
    // Bad input names the field, and nothing is started.
    try {
      await mpf.startSwap({ ...swapRequest, txn_ref: `${orderId}-bad`, amount: -5 });
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      console.log(`refused: ${err.message}`);
    }

    const linkRequest: LinkCreateRequest = {
      user_ref: 'user-42',
      txn_merchant_ref: `${orderId}-invoice`,
      amount: 25_000,
      full_name: 'Ada Lovelace',
      email: 'ada@example.com',
      phone: '+2348000000000',
      redirect_url: 'https://shop.example.com/orders/return',
    };
    const { link } = await mpf.createLink(linkRequest);
    console.log(`payment link ${link.link_id}: ${link.state}; the customer pays at ${link.pay_link}`);
  } finally {
    await mpf.temporal.connection.close();
  }
}

main(process.argv[2] ?? `order-${Date.now()}`).catch((err: unknown) => {
  console.error(err instanceof Error ? `${err.name}: ${err.message}` : err);
  process.exitCode = 1;
});

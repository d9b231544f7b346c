/** Examples shown in the gateway's OpenAPI document and its /docs page (made-up values, no real secret). */
const swapView = {
  swap_id: 'swap-order-1001',
  state: 'awaiting_pin' as const,
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
  pin_attempts_used: 0,
  pin_attempts_left: 3,
  notifications: [],
  updated_at: '2026-01-15T10:00:00.412Z',
};

const linkView = {
  link_id: 'paylink-invoice-2001',
  state: 'awaiting_payment' as const,
  txn_merchant_ref: 'invoice-2001',
  user_ref: 'user-42',
  amount: 25000,
  currency: 'NGN',
  payment_ref: 'PL-19d2e0',
  pay_link: 'https://checkout.example.com/pay?payment_ref=PL-19d2e0',
  redirect_url: 'https://shop.example.com/orders/2001/return',
  expires_at: '2026-01-16T10:00:00.000Z',
  notifications: [],
  updated_at: '2026-01-15T10:00:00.388Z',
};

export const EXAMPLES = {
  swapStart: { user_ref: 'user-42', from_currency: 'USD', to_currency: 'NGN', amount: 100, txn_ref: 'order-1001' },
  linkCreate: {
    user_ref: 'user-42',
    txn_merchant_ref: 'invoice-2001',
    amount: 25000,
    full_name: 'Ada Lovelace',
    email: 'ada@example.com',
    phone: '+2348000000000',
    redirect_url: 'https://shop.example.com/orders/2001/return',
    success_message: 'Thank you for your order',
  },
  swapView,
  startedSwap: {
    ...swapView,
    pin_url: 'https://pay.example.com/pin/swap-order-1001#token=<pin_token>',
    pin_token: '<pin_token: 64 characters, base64url>',
  },
  pinOutcome: { outcome: 'pin_rejected' as const, state: 'awaiting_pin' as const, attempts_left: 2 },
  linkView,
  error: { error: 'invalid_request', message: 'amount: must be positive', field: 'amount' },
  unavailable: { error: 'worker_unavailable' as const, message: 'no worker answered within 10 s', flow_id: 'swap-order-1001', last_known_state: 'awaiting_pin' },
  pending: { error: 'pending' as const, message: 'the swap was started but no worker answered within 30 s', flow_id: 'swap-order-1001' },
};

/** Input the provider would have been sent is refused first, naming the field. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { describeZodError, HostedLinkRequest, SwapInitRequest } from '../../src/contract/provider';

const swap = { user_ref: 'u-1', from_currency: 'USD', to_currency: 'NGN', amount: 10, txn_ref: 't-1', notification_url: 'http://127.0.0.1:1/n' };
const link = {
  user_ref: 'u-1',
  txn_merchant_ref: 'm-1',
  amount: 2500,
  currency: 'NGN',
  full_name: 'Ada Obi',
  email: 'ada@example.com',
  phone: '+2348012345678',
  redirect_url: 'http://127.0.0.1:9/thanks',
  notification_url: 'http://127.0.0.1:1/n',
};
const problem = (schema: typeof SwapInitRequest | typeof HostedLinkRequest, body: unknown): string => {
  const r = schema.safeParse(body);
  assert.equal(r.success, false, `accepted ${JSON.stringify(body)}`);
  return describeZodError(r.error!);
};

describe('swap and link input the provider is never sent', () => {
  test('accepts the ordinary bodies', () => {
    assert.equal(SwapInitRequest.safeParse(swap).success, true);
    assert.equal(SwapInitRequest.safeParse({ ...swap, from_currency: 'USDT' }).success, true);
    assert.equal(HostedLinkRequest.safeParse(link).success, true);
  });

  test('refuses an unknown currency code, naming the field', () => {
    assert.match(problem(SwapInitRequest, { ...swap, from_currency: 'XYZ' }), /^from_currency: must be a known currency code/);
    assert.match(problem(SwapInitRequest, { ...swap, to_currency: 'ABCD' }), /^to_currency: must be a known currency code/);
  });

  test('refuses a swap from a currency to itself', () => {
    assert.match(problem(SwapInitRequest, { ...swap, to_currency: 'USD' }), /^to_currency: must differ from from_currency/);
  });

  test('refuses control characters in full_name and success_message, and an e-mail over 254 characters', () => {
    assert.match(problem(HostedLinkRequest, { ...link, full_name: 'Ada\u0000Obi' }), /^full_name: must not contain control characters/);
    assert.match(problem(HostedLinkRequest, { ...link, success_message: 'thanks\r\nSet-Cookie: x' }), /^success_message: must not contain control characters/);
    assert.match(problem(HostedLinkRequest, { ...link, email: `${'a'.repeat(250)}@example.com` }), /^email: must be at most 254 characters/);
  });
});

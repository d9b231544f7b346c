/**
 * What callers send the client (and, through it, the gateway): the zod request bodies, their
 * inferred types, and the one way a bad body becomes an InputError naming the field (nothing is
 * started).
 */
import { z } from 'zod';
import { describeZodError, differentCurrencies, HostedLinkRequest, SwapInitFields, WalletPin } from '../../contract/provider';
import { InputError } from './errors';
import { WebhookUrl } from './merchant-events';

export const SwapStartBody = SwapInitFields.omit({ notification_url: true })
  .extend({ webhook_url: WebhookUrl.optional() })
  .refine(...differentCurrencies);
export type SwapStartBody = z.infer<typeof SwapStartBody>;
export const LinkCreateBody = HostedLinkRequest.omit({ notification_url: true }).extend({
  currency: HostedLinkRequest.shape.currency.default('NGN'),
  webhook_url: WebhookUrl.optional(),
});
export type LinkCreateBody = z.input<typeof LinkCreateBody>;
export const PinBody = z.object({ wallet_pin: WalletPin });

/** What a caller passes to startSwap (the contract's zod schema, inferred): validated again at run time. */
export type SwapStartRequest = z.input<typeof SwapStartBody>;
/** What a caller passes to createLink; `currency` defaults to NGN (the only one the provider takes). */
export type LinkCreateRequest = z.input<typeof LinkCreateBody>;
/** What a caller passes to submitPin: the user's wallet PIN, sealed before it leaves this process. */
export type PinRequest = z.input<typeof PinBody>;

export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown, prefix = ''): z.output<T> {
  const r = schema.safeParse(value);
  if (!r.success) throw new InputError(describeZodError(r.error, prefix), r.error.issues[0]?.path.map(String).join('.') ?? '');
  return r.data;
}

/**
 * The provider contract: every shape of docs/provider-api.md as a zod schema, and every
 * assumption we make where that document is silent. Nothing about the provider is decided
 * anywhere else; the README's "Assumptions about the provider" lists what is here.
 *
 * This module is pure (zod only): the gateway, the simulator and the activities import it; the
 * workflow bundle imports only its zod-free parts (expiry.ts, notifications.ts).
 */
import { z } from 'zod';
import { EXPIRY_SAFETY_MARGIN } from './expiry';

// ---------------------------------------------------------------------------------------------
// Paths and versioning (documented)
// ---------------------------------------------------------------------------------------------

export const API_PREFIX = '/api/v1';
export const PROVIDER_PATHS = {
  swapInit: `${API_PREFIX}/user/wallet/swap`,
  swapConfirm: `${API_PREFIX}/user/wallet/swap/confirm`,
  hostedLink: `${API_PREFIX}/collection/hosted-link`,
  categories: `${API_PREFIX}/utility/categories`,
} as const;
export type ProviderEndpoint = keyof typeof PROVIDER_PATHS;

/** Documented constants of the hosted bank-transfer link. */
export const HOSTED_LINK = {
  paymentMethod: 'HOSTED_PAY_LINK',
  paymentChannel: 'BANK_TRANSFER',
  currency: 'NGN',
} as const;

// ---------------------------------------------------------------------------------------------
// Assumptions where the document is silent (each one listed in the README)
// ---------------------------------------------------------------------------------------------

export const ASSUMPTIONS = {
  /** A success envelope has `status` equal (case-insensitively) to one of these. */
  successStatusValues: ['success', 'successful', 'ok'] as readonly string[],
  /** Amounts: positive, finite, at most this many decimals, at most this value. */
  amountMaxDecimals: 2,
  amountMax: 1_000_000_000,
  /** PIN: whatever the user types, trimmed, 1..PIN_MAX_LENGTH chars, no control characters. */
  pinMaxLength: 32,
  /** Our own cap on PIN attempts per swap (configurable with SWAP_PIN_MAX_ATTEMPTS). */
  pinMaxAttemptsDefault: 3,
  /** Confirm no later than the window less min(5 s, 10 % of the window). */
  expirySafetyMarginMaxMs: EXPIRY_SAFETY_MARGIN.maxMs,
  expirySafetyMarginFraction: EXPIRY_SAFETY_MARGIN.fraction,
  /** Categories listing: by default only x-merchant-ref; Bearer ACCESS_TOKEN when MPS_CATEGORIES_BEARER=1. */
  categoriesSendBearerDefault: false,
  /** Client-side bound on concurrent requests to the provider per origin. */
  maxConnectionsPerOrigin: 8,
  /** Longest Retry-After we honour inside one attempt before giving the retry back to Temporal. */
  retryAfterCapMs: 30_000,
  /**
   * Swap currencies: the document names none. We accept ISO 4217 codes (the runtime's ICU list)
   * and these stablecoins and crypto assets that wallets commonly hold; anything else is refused
   * before the provider is called.
   */
  extraWalletCurrencies: ['USDT', 'USDC', 'BTC', 'ETH'] as readonly string[],
  /** E-mail addresses: RFC 5321's 254 characters. */
  emailMaxLength: 254,
} as const;

export function isSuccessStatus(status: unknown): boolean {
  return typeof status === 'string' && ASSUMPTIONS.successStatusValues.includes(status.trim().toLowerCase());
}

export { expirySafetyMarginMs } from './expiry';

// ---------------------------------------------------------------------------------------------
// Shared field rules
// ---------------------------------------------------------------------------------------------

const decimalsOf = (n: number): number => {
  const s = String(n);
  if (s.includes('e-')) return Number(s.split('e-')[1]);
  const dot = s.indexOf('.');
  return dot < 0 ? 0 : s.length - dot - 1;
};

export const Amount = z
  .number({ error: 'must be a number' })
  .finite('must be finite')
  .positive('must be greater than 0')
  .max(ASSUMPTIONS.amountMax, `must be at most ${ASSUMPTIONS.amountMax}`)
  .refine((n) => decimalsOf(n) <= ASSUMPTIONS.amountMaxDecimals, {
    message: `must have at most ${ASSUMPTIONS.amountMaxDecimals} decimal places`,
  });

let knownCurrencies: Set<string> | undefined;
/** ISO 4217 (from the runtime's ICU data) plus ASSUMPTIONS.extraWalletCurrencies. */
export function isKnownCurrency(code: string): boolean {
  knownCurrencies ??= new Set([...Intl.supportedValuesOf('currency'), ...ASSUMPTIONS.extraWalletCurrencies]);
  return knownCurrencies.has(code);
}

export const CurrencyCode = z
  .string()
  .regex(/^[A-Z]{3,5}$/, 'must be an upper-case currency code such as NGN or USD')
  .refine(isKnownCurrency, { message: `must be a known currency code (ISO 4217 or ${ASSUMPTIONS.extraWalletCurrencies.join(', ')})` });

// eslint-disable-next-line no-control-regex
const NO_CONTROL_CHARACTERS = /^[^\u0000-\u001f\u007f]*$/;
/** Free text shown to people (names, messages): no control characters (NUL, newlines, escapes). */
const PlainText = (max: number) =>
  z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`).regex(NO_CONTROL_CHARACTERS, 'must not contain control characters');

/** Merchant references end up in workflow ids, URLs and search attributes: keep them plain. */
export const Reference = z
  .string()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .regex(/^[A-Za-z0-9._:-]+$/, 'may contain only letters, digits, ".", "_", ":" and "-"');

export const HttpUrl = z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' });

export const WalletPin = z
  .string({ error: 'must be a string' })
  .transform((s) => s.trim())
  .pipe(
    z
      .string()
      .min(1, 'must not be empty')
      .max(ASSUMPTIONS.pinMaxLength, `must be at most ${ASSUMPTIONS.pinMaxLength} characters`)
      // eslint-disable-next-line no-control-regex
      .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters'),
  );

// ---------------------------------------------------------------------------------------------
// Envelope (documented: status, message, data)
// ---------------------------------------------------------------------------------------------

export const Envelope = z.object({
  status: z.string(),
  message: z.string().optional().default(''),
  data: z.unknown().optional(),
});
export type Envelope = z.infer<typeof Envelope>;

// ---------------------------------------------------------------------------------------------
// Swap
// ---------------------------------------------------------------------------------------------

/** Our own explicit swap-init request (the document does not show its fields). */
export const SwapInitFields = z.object({
  user_ref: Reference,
  from_currency: CurrencyCode,
  to_currency: CurrencyCode,
  amount: Amount,
  txn_ref: Reference,
  notification_url: HttpUrl,
});
/** A swap converts between two different currencies. */
export const differentCurrencies: [(r: { from_currency: string; to_currency: string }) => boolean, { path: string[]; message: string }] = [
  (r) => r.from_currency !== r.to_currency,
  { path: ['to_currency'], message: 'must differ from from_currency' },
];
export const SwapInitRequest = SwapInitFields.refine(...differentCurrencies);
export type SwapInitRequest = z.infer<typeof SwapInitRequest>;

/** The one place our swap-init request becomes the provider's body. */
export function toProviderSwapInitBody(req: SwapInitRequest): Record<string, unknown> {
  return {
    user_ref: req.user_ref,
    from_currency: req.from_currency,
    to_currency: req.to_currency,
    amount: req.amount,
    txn_ref: req.txn_ref,
    notification_url: req.notification_url,
  };
}

export const SwapInitData = z.object({
  payment_ref: z.string().min(1),
  txn_ref: z.string().min(1),
  from_currency: z.string(),
  to_currency: z.string(),
  amount: z.number(),
  converted_amount: z.number(),
  rate_used: z.number(),
  auth_token: z.string().min(1),
  expires_in_seconds: z.number().int().positive(),
});
export type SwapInitData = z.infer<typeof SwapInitData>;

export const SwapConfirmRequest = z.object({
  user_ref: Reference,
  auth_token: z.string().min(1),
  wallet_pin: z.string().min(1),
});
export type SwapConfirmRequest = z.infer<typeof SwapConfirmRequest>;

export const SwapConfirmResult = z.object({ status: z.string(), message: z.string().optional().default('') });
export type SwapConfirmResult = z.infer<typeof SwapConfirmResult>;

// ---------------------------------------------------------------------------------------------
// Hosted payment link
// ---------------------------------------------------------------------------------------------

export const HostedLinkRequest = z.object({
  user_ref: Reference,
  txn_merchant_ref: Reference,
  amount: Amount,
  currency: z.literal(HOSTED_LINK.currency, { error: `must be ${HOSTED_LINK.currency} for bank transfer` }),
  full_name: PlainText(200),
  email: z.email('must be a valid e-mail address').max(ASSUMPTIONS.emailMaxLength, `must be at most ${ASSUMPTIONS.emailMaxLength} characters`),
  phone: z.string().regex(/^\+?[0-9 ()-]{7,20}$/, 'must be a phone number of 7 to 20 digits, optionally starting with +'),
  chain: z.string().max(50).optional().default(''),
  success_message: z.string().max(500).regex(NO_CONTROL_CHARACTERS, 'must not contain control characters').optional(),
  payment_method: z.literal(HOSTED_LINK.paymentMethod).default(HOSTED_LINK.paymentMethod),
  payment_channel: z.literal(HOSTED_LINK.paymentChannel).default(HOSTED_LINK.paymentChannel),
  redirect_url: HttpUrl,
  notification_url: HttpUrl,
});
export type HostedLinkRequest = z.infer<typeof HostedLinkRequest>;

export const HostedLinkData = z.object({
  payment_ref: z.string().min(1),
  pay_link: z.string().url(),
  txn_merchant_ref: z.string(),
  amount: z.number(),
  currency: z.string(),
  redirect_url: z.string(),
  success_message: z.string().nullable().optional(),
  pay_data: z.record(z.string(), z.unknown()).nullable().optional(),
});
export type HostedLinkData = z.infer<typeof HostedLinkData>;

// ---------------------------------------------------------------------------------------------
// Categories (codes are strings: 13.1 and 13.10 differ; names repeat)
// ---------------------------------------------------------------------------------------------

export const Category = z.object({ code: z.string().min(1), name: z.string() });
export type Category = z.infer<typeof Category>;
export const CategoriesData = z.object({ data: z.array(Category) });

// ---------------------------------------------------------------------------------------------
// Notifications (payload, signing, retries and ordering are not documented)
// ---------------------------------------------------------------------------------------------

// Zod-free (the workflow bundle imports them, and every workflow evaluates its modules anew):
export {
  compactNotificationPayload,
  mapNotificationOutcome,
  NOTIFICATION_KEPT_PAYLOAD_CHARS,
  NOTIFICATION_STATUS_FIELDS,
  notificationFacts,
  notificationIdOf,
  type NotificationOutcome,
  parseNotificationBody,
  readNotification,
} from './notifications';

/**
 * What the simulator sends (our assumption of a plausible payload; the receiver does not rely on
 * it beyond mapNotificationOutcome): { event, data: { payment_ref, txn_merchant_ref|txn_ref,
 * status, amount, currency, notification_id, sequence, occurred_at } }.
 */
export const SimulatorNotification = z.object({
  event: z.string(),
  data: z.object({
    payment_ref: z.string(),
    txn_merchant_ref: z.string().optional(),
    txn_ref: z.string().optional(),
    status: z.string(),
    amount: z.number().optional(),
    currency: z.string().optional(),
    notification_id: z.string(),
    sequence: z.number().int(),
    occurred_at: z.string(),
  }),
});
export type SimulatorNotification = z.infer<typeof SimulatorNotification>;

/** First issue of zod errors as "field: message", for clear 400s naming the field. */
export function describeZodError(err: z.ZodError, prefix = ''): string {
  return err.issues
    .map((i) => `${[prefix, ...i.path.map(String)].filter(Boolean).join('.') || '(body)'}: ${i.message}`)
    .join('; ');
}

// ---------------------------------------------------------------------------------------------
// Confirmation rejections (assumption: the document shows no error codes, so a rejected swap
// confirmation is told apart by the provider's message text only; rules are tried in order)
// ---------------------------------------------------------------------------------------------

export type ConfirmRejectionKind = 'wrong_pin' | 'token_invalid' | 'other';

export const CONFIRM_REJECTION_RULES: ReadonlyArray<{ kind: Exclude<ConfirmRejectionKind, 'other'>; pattern: RegExp }> = [
  { kind: 'wrong_pin', pattern: /pin/i },
  { kind: 'token_invalid', pattern: /token|expired|used/i },
];

/** Maps the message of a rejected confirmation to what the swap flow does next. */
export function classifyConfirmRejectionMessage(message: string): ConfirmRejectionKind {
  for (const rule of CONFIRM_REJECTION_RULES) if (rule.pattern.test(message)) return rule.kind;
  return 'other';
}

// ---------------------------------------------------------------------------------------------
// Evidence from retries (assumptions, relied on to retry POSTs whose outcome is unknown):
// - the provider refuses a reused txn_ref / txn_merchant_ref (HTTP 409 or a "duplicate" message),
//   so a retried initialization or link creation can never create a second one, and a duplicate
//   answer to a RETRY proves an earlier attempt was applied;
// - a swap's auth_token is single-use, so a retried confirmation can never convert twice, and an
//   "already used" answer to a RETRY inside the window is evidence the earlier attempt confirmed.
// ---------------------------------------------------------------------------------------------

/** A rejection that says the reference is already taken. */
export function isDuplicateReferenceRejection(httpStatus: number | undefined, message: string | undefined): boolean {
  return httpStatus === 409 || /duplicate/i.test(message ?? '');
}

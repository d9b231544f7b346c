/**
 * The merchant events, typed from the `webhooks` of the gateway's OpenAPI document (each event
 * type's schema, written once in the contract's zod schemas), and `verifyEvent`, which checks a
 * delivery's Standard Webhooks signature (HMAC-SHA256 with node:crypto) and answers the typed event:
 *
 *   app.post('/hooks/mpf', express.raw({ type: 'application/json' }), (req, res) => {
 *     let event: MerchantEvent;
 *     try { event = verifyEvent(req.body, req.headers, process.env.MPF_WEBHOOK_SECRET!); }
 *     catch (err) { return res.status(400).end(); }                 // MpfSignatureVerificationError
 *     if (event.type === 'swap.confirmed') fulfil(event.data.txn_ref); // event.data typed for swap.confirmed
 *     res.status(204).end();                                          // de-duplicate on event.id
 *   });
 *
 * Verify the raw body, byte for byte as received (not a re-serialised object). verifyEvent checks
 * the signature, the timestamp and the event's envelope (id, type, timestamp, data); it does not
 * refuse an event type this version does not know (a newer gateway may send one).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { components, webhooks } from './gateway-api';
import { MpfSignatureVerificationError } from './errors';

type BodyOf<Operation> = Operation extends { requestBody: { content: { 'application/json': infer E } } } ? E : never;

/** Every event type this version of the gateway emits. */
export type MerchantEventType = keyof webhooks & string;
/** The event of one type: `MerchantEventOf<'swap.confirmed'>`. */
export type MerchantEventOf<T extends MerchantEventType> = BodyOf<webhooks[T]['post']>;
/** Any event, discriminated by `type`. */
export type MerchantEvent = { [T in MerchantEventType]: MerchantEventOf<T> }[MerchantEventType];
export type SwapEvent = Extract<MerchantEvent, { type: `swap.${string}` }>;
export type PaymentLinkEvent = Extract<MerchantEvent, { type: `payment_link.${string}` }>;
export type SwapEventData = components['schemas']['SwapEventData'];
export type PaymentLinkEventData = components['schemas']['PaymentLinkEventData'];

/** Headers as Node's IncomingMessage has them, or a fetch Headers. */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

export interface VerifyEventOptions {
  /** How far webhook-timestamp may be from now, in seconds (default 300, as Standard Webhooks). */
  toleranceSeconds?: number;
  /** "Now", for tests. */
  now?: Date;
}

const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

function headerOf(headers: HeadersLike, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value.join(' ') : value;
}

/** The HMAC key of a `whsec_<base64>` secret (the prefix is optional). */
function keyOf(secret: string): Buffer {
  const raw = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(raw)) throw new MpfSignatureVerificationError('invalid_secret', 'the signing secret is not whsec_ followed by base64');
  return Buffer.from(raw, 'base64');
}

/**
 * Checks a delivery's signature (any of `secret` may match: pass the new and the old one while
 * rotating) and its timestamp, and answers the event. Throws MpfSignatureVerificationError
 * (`reason` says why) otherwise: do not act on such a body.
 */
export function verifyEvent(body: string | Uint8Array, headers: HeadersLike, secret: string | readonly string[], opts: VerifyEventOptions = {}): MerchantEvent {
  const id = headerOf(headers, 'webhook-id');
  const timestamp = headerOf(headers, 'webhook-timestamp');
  const signatures = headerOf(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) {
    throw new MpfSignatureVerificationError('missing_header', 'the webhook-id, webhook-timestamp and webhook-signature headers are required');
  }
  if (!/^\d+$/.test(timestamp)) throw new MpfSignatureVerificationError('invalid_timestamp', 'webhook-timestamp is not a number of seconds');
  const now = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs(now - Number(timestamp)) > tolerance) {
    throw new MpfSignatureVerificationError('timestamp_out_of_tolerance', `webhook-timestamp is more than ${tolerance} s from now (a replay, or a wrong clock)`);
  }

  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const offered = signatures
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => Buffer.from(s.slice(3), 'base64'));
  const secrets = typeof secret === 'string' ? [secret] : secret;
  if (secrets.length === 0) throw new MpfSignatureVerificationError('invalid_secret', 'no signing secret was given');
  const matched = secrets.some((s) => {
    const expected = createHmac('sha256', keyOf(s)).update(`${id}.${timestamp}.`).update(bytes).digest();
    return offered.some((o) => o.length === expected.length && timingSafeEqual(o, expected));
  });
  if (!matched) throw new MpfSignatureVerificationError('no_matching_signature', 'no signature matches the body with the given secret');

  let event: unknown;
  try {
    event = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new MpfSignatureVerificationError('invalid_body', 'the signed body is not JSON');
  }
  const e = event as Record<string, unknown> | null;
  if (!e || typeof e !== 'object' || typeof e.id !== 'string' || typeof e.type !== 'string' || typeof e.timestamp !== 'string' || !e.data || typeof e.data !== 'object') {
    throw new MpfSignatureVerificationError('invalid_body', 'the signed body is not an event (id, type, timestamp, data)');
  }
  return event as MerchantEvent;
}

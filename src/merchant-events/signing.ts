/**
 * Standard Webhooks signing (https://www.standardwebhooks.com) with the `standardwebhooks`
 * package: `webhook-id`, `webhook-timestamp` (seconds) and `webhook-signature` (`v1,<base64
 * HMAC-SHA256 of "id.timestamp.body">`, one per secret, space-separated, so a secret can be
 * rotated without a gap). Secrets are `whsec_` + base64 of 24–64 random bytes.
 */
import { randomBytes } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

export { WebhookVerificationError };

const SECRET_SHAPE = /^whsec_[A-Za-z0-9+/]+={0,2}$/;

/** What is wrong with a signing secret, or undefined. Never echoes it. */
export function secretProblem(secret: string): string | undefined {
  if (!SECRET_SHAPE.test(secret)) return 'must be whsec_ followed by base64 (generate one with `mpf events secret`)';
  const bytes = Buffer.from(secret.slice('whsec_'.length), 'base64').length;
  if (bytes < 24 || bytes > 64) return `must hold 24 to 64 random bytes after whsec_ (it holds ${bytes})`;
  return undefined;
}

/** Several secrets in one variable: separated by spaces or commas (the first is the newest). */
export function splitSecrets(value: string | undefined): string[] {
  return (value ?? '').split(/[\s,]+/).filter(Boolean);
}

export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The three headers of one delivery attempt. */
export function signatureHeaders(secrets: readonly string[], id: string, at: Date, body: string): Record<string, string> {
  if (secrets.length === 0) throw new Error('no signing secret');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((s) => new Webhook(s).sign(id, at, body)).join(' '),
  };
}

/**
 * Verifies a delivery the way a merchant's receiver does (any of `secrets` may match; the
 * timestamp must be within 5 minutes) and returns the parsed event; throws
 * WebhookVerificationError otherwise.
 */
export function verifyDelivery(secrets: readonly string[], body: string, headers: Record<string, string | string[] | undefined>): unknown {
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) flat[k.toLowerCase()] = Array.isArray(v) ? v.join(' ') : v;
  let last: unknown = new WebhookVerificationError('no signing secret');
  for (const secret of secrets) {
    try {
      return new Webhook(secret).verify(body, flat);
    } catch (err) {
      last = err;
    }
  }
  throw last;
}

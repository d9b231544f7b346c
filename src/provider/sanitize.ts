/**
 * Masking of text that came from the provider (or from a failed request) before it goes into an
 * error message: known secrets are replaced, anything that looks like a bearer credential or a
 * `token=`/`pin:` value is masked, and the excerpt is kept short and on one line.
 */

export const MASK = '***';
export const EXCERPT_MAX_CHARS = 200;

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `Bearer abc`, `Basic abc` */
const AUTH_SCHEME = /\b(Bearer|Basic|Token)\s+[^\s,;"'&]+/gi;
/** `auth_token=…`, `"wallet_pin":"…"`, `secret: …`, `x-api-key=…` */
const SECRET_ASSIGNMENT =
  /\b([A-Za-z0-9_-]*(?:token|secret|key|pin|password|passwd|authorization|credential)[A-Za-z0-9_-]*)("?\s*[:=]\s*"?)(?!(?:Bearer|Basic|Token)\s)[^\s,;"'&}]+/gi;
/** Long opaque strings (tokens, keys, JWTs); 32+ characters of token alphabet. */
const OPAQUE = /[A-Za-z0-9_\-+/=.]{32,}/g;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]+/g;

/**
 * A short, single-line, masked excerpt of `text`. Every string of `secrets` (credentials, the
 * auth_token and PIN of the request being made) is replaced wherever it occurs.
 */
export function sanitizeExcerpt(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = text;
  const known = secrets.filter((s): s is string => typeof s === 'string' && s.length > 0);
  // Longest first, so a secret that contains another is masked whole.
  for (const s of [...known].sort((a, b) => b.length - a.length)) {
    out = out.replace(new RegExp(escapeRegExp(s), 'g'), MASK);
  }
  out = out
    .replace(AUTH_SCHEME, `$1 ${MASK}`)
    .replace(SECRET_ASSIGNMENT, `$1$2${MASK}`)
    .replace(OPAQUE, MASK)
    .replace(CONTROL, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (out.length > EXCERPT_MAX_CHARS) out = `${out.slice(0, EXCERPT_MAX_CHARS - 1)}…`;
  return out;
}

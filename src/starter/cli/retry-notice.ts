/**
 * What the CLI says while the gateway client waits to retry: one line on stderr per retry, with
 * the answer's status, the gateway's error code and message (or why no answer came), and how long
 * it waits (the answer's Retry-After, when it gave one). Never a credential, a header or a body
 * other than the gateway's own message; the URL is shown without its query.
 *
 *   mpf: the gateway at http://127.0.0.1:8080 answered 503 provider_unavailable to POST /v1/swaps
 *     (money-moving calls are paused …); waiting 30 s (Retry-After: 30), then retry 1 of at most 3
 */
import { RETRY_DEFAULTS, type RetryInfo } from '../../http-client/retry';

/** How much of the gateway's message a line carries. */
const REASON_MAX = 300;

function seconds(ms: number): string {
  return ms >= 10_000 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(1).replace(/\.0$/, '')} s`;
}

/** The line for one retry of a call to `where` (e.g. `the gateway at http://…`). */
export function retryLine(where: string, i: RetryInfo, maxRetries: number = RETRY_DEFAULTS.maxRetries): string {
  // The path only: a query (a page token) adds nothing to the line.
  const path = URL.canParse(i.url) ? new URL(i.url).pathname : (i.url.split('?')[0] ?? '');
  const reason = i.reason ? ` (${i.reason.split('\n')[0]!.slice(0, REASON_MAX)})` : '';
  const what =
    i.status !== undefined
      ? `answered ${i.status}${i.code ? ` ${i.code}` : ''} to ${i.method} ${path}${reason}`
      : `did not answer ${i.method} ${path} (${i.code ?? 'no answer'}${i.reason ? `: ${i.reason.split('\n')[0]!.slice(0, REASON_MAX)}` : ''})`;
  const after = i.retryAfterSeconds !== undefined ? ` (Retry-After: ${i.retryAfterSeconds})` : '';
  return `mpf: ${where} ${what}; waiting ${seconds(i.delayMs)}${after}, then retry ${i.attempt} of at most ${maxRetries}`;
}

/** An `onRetry` for the light client that writes retryLine to stderr. */
export function retryNotice(where: string, maxRetries?: number): (i: RetryInfo) => void {
  return (i) => {
    process.stderr.write(`${retryLine(where, i, maxRetries)}\n`);
  };
}

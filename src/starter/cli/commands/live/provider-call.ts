/**
 * The one provider call of `mpf live check`: the read-only categories GET, through the worker's own
 * client (providerClientFromEnv: the same credentials, headers, timeouts and Pool). What the
 * answer's headers say is read from undici's diagnostics channel, so the client is used unchanged:
 * whether the simulator answered (its mark, which the live provider never sends) and the
 * provider's clock (the Date header).
 */
import diagnostics from 'node:diagnostics_channel';
import type { AppEnv } from '../../../../config/env';
import { buildCategoryTree } from '../../../../contract/categories';
import { PROVIDER_PATHS } from '../../../../contract/provider';
import { ProviderAuthError, ProviderError } from '../../../../provider/errors';
import { type ProviderClient, providerClientFromEnv } from '../../../../provider/client';
import { check, type CheckResult, skipped } from './result';

/**
 * The simulator's mark on every answer (src/simulator/identity.ts, SIMULATOR_ANSWER_HEADER; the
 * production path loads no simulator module, so the name is repeated here and a test holds the
 * two equal).
 */
export const SIMULATOR_MARK_HEADER = 'x-mpf-simulator';

/**
 * The provider's clock against ours (docs/operations/going-live.md says why). Beyond WARN: a swap's
 * confirmation margin (at most 5 s, contract/expiry.ts) is used up by a worker clock this far off.
 * Beyond FAIL: the host is not synchronised at all. Date counts whole seconds, so a second or so is
 * the measurement's own noise.
 */
export const CLOCK_SKEW = { failSeconds: 30, warnSeconds: 5 } as const;

export interface Answer {
  status: number;
  headers: Record<string, string>;
  /** Local time when the request was handed to the client, and when the answer's headers arrived. */
  sentAt: number;
  receivedAt: number;
}

/** The raw header list undici publishes ([name, value, name, value …] as Buffers) as a lower-cased map. */
function headerMap(raw: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(raw)) return out;
  for (let i = 0; i + 1 < raw.length; i += 2) out[String(raw[i]).toLowerCase()] = String(raw[i + 1]);
  return out;
}

/** The categories GET through the worker's client (closed after); the answer's headers whatever its status. */
async function callCategories(client: ProviderClient): Promise<{ answer?: Answer; count?: { all: number; parents: number }; error?: unknown }> {
  const path = client.urlOf('categories').slice(client.origin.length);
  let answer: Answer | undefined;
  const sentAt = Date.now();
  const onHeaders = (message: unknown): void => {
    const m = message as { request?: { origin?: unknown; path?: unknown }; response?: { statusCode?: number; headers?: unknown } };
    if (String(m.request?.origin) !== client.origin || m.request?.path !== path) return;
    answer = { status: m.response?.statusCode ?? 0, headers: headerMap(m.response?.headers), sentAt, receivedAt: Date.now() };
  };
  diagnostics.subscribe('undici:request:headers', onHeaders);
  try {
    const categories = await client.listCategories();
    return { answer, count: { all: categories.length, parents: buildCategoryTree(categories).parents.length } };
  } catch (error) {
    return { answer, error };
  } finally {
    diagnostics.unsubscribe('undici:request:headers', onHeaders);
    await client.close();
  }
}

function callCheck(env: AppEnv, r: Awaited<ReturnType<typeof callCategories>>): CheckResult {
  const what = `GET ${PROVIDER_PATHS.categories}`;
  const ms = r.answer ? ` in ${r.answer.receivedAt - r.answer.sentAt} ms` : '';
  if (r.count) return check('categories', 'provider call', 'pass', `${what}: HTTP ${r.answer?.status ?? 200}, ${r.count.all} categories (${r.count.parents} parents)${ms}`, { status: r.answer?.status, ...r.count });
  const err = r.error;
  if (err instanceof ProviderAuthError) {
    const sent = env.MPS_CATEGORIES_BEARER ? 'x-merchant-ref (MPS_MERCHANT_REF) and the Bearer access token (MPS_ACCESS_TOKEN)' : 'x-merchant-ref (MPS_MERCHANT_REF)';
    return check('categories', 'provider call', 'fail', `${what}: HTTP ${err.httpStatus}: the provider refused our credentials: check ${sent}`, { status: err.httpStatus });
  }
  const text = err instanceof ProviderError ? `${err.name} (${err.kind}): ${err.message}` : (err as Error)?.message ?? String(err);
  return check('categories', 'provider call', 'fail', `${what}: ${text}`, r.answer ? { status: r.answer.status } : undefined);
}

function simulatorCheck(answer: Answer | undefined): CheckResult {
  if (!answer) return skipped('simulator', 'not the simulator', 'no answer to look at');
  const mark = answer.headers[SIMULATOR_MARK_HEADER];
  if (mark !== undefined) {
    return check(
      'simulator',
      'not the simulator',
      'fail',
      `the answer carries ${SIMULATOR_MARK_HEADER}: ${mark}: this is the provider simulator (no money moves), not the live provider: refused`,
      { mark },
    );
  }
  return check('simulator', 'not the simulator', 'pass', `no ${SIMULATOR_MARK_HEADER} mark on the answer`);
}

/**
 * The provider's Date against the local clock at the middle of the exchange. Date counts whole
 * seconds, so the provider's instant is taken as the middle of its second; the uncertainty is half
 * a second plus half the round trip.
 */
export function clockCheck(answer: Answer | undefined): CheckResult {
  if (!answer) return skipped('clock', 'clock', 'no answer to read a Date from');
  const date = answer.headers.date;
  const theirs = date ? Date.parse(date) : NaN;
  if (Number.isNaN(theirs)) return check('clock', 'clock', 'warn', "the answer has no usable Date header: the clock could not be compared with the provider's");
  const ours = (answer.sentAt + answer.receivedAt) / 2;
  const skew = (theirs + 500 - ours) / 1000;
  const within = (500 + (answer.receivedAt - answer.sentAt) / 2) / 1000;
  const details = { provider_date: new Date(theirs).toISOString(), local_time: new Date(ours).toISOString(), skew_seconds: Math.round(skew * 10) / 10, uncertainty_seconds: Math.round(within * 10) / 10 };
  const off = Math.abs(skew) <= within ? 'agrees with it' : `is ${Math.abs(details.skew_seconds)} s ${skew >= 0 ? 'behind' : 'ahead'}`;
  const shown = `provider's Date ${date}; this host ${off} (±${details.uncertainty_seconds} s)`;
  const limits = `fail beyond ${CLOCK_SKEW.failSeconds} s, warn beyond ${CLOCK_SKEW.warnSeconds} s`;
  if (Math.abs(skew) > CLOCK_SKEW.failSeconds) return check('clock', 'clock', 'fail', `${shown}: ${limits}: synchronise this host's clock (NTP)`, details);
  if (Math.abs(skew) > CLOCK_SKEW.warnSeconds) return check('clock', 'clock', 'warn', `${shown}: ${limits}: is clock synchronisation (NTP) running?`, details);
  return check('clock', 'clock', 'pass', `${shown} (${limits})`, details);
}

/** The categories call, then what its answer says: simulator or not, and the clock. */
export async function providerChecks(env: AppEnv, baseUrl: string): Promise<CheckResult[]> {
  let client: ProviderClient;
  try {
    client = providerClientFromEnv(env, baseUrl);
  } catch (e) {
    // The worker's client refuses this configuration (a query in the URL, say): so would the worker.
    const why = `not sent: the worker's provider client refuses the configuration: ${(e as Error).message}`;
    return [check('categories', 'provider call', 'fail', why), skipped('simulator', 'not the simulator', 'no call made'), skipped('clock', 'clock', 'no call made')];
  }
  const r = await callCategories(client);
  return [callCheck(env, r), simulatorCheck(r.answer), clockCheck(r.answer)];
}

/**
 * The settings half of `mpf live check`: the worker's own environment (the same loadEnv, NAME and
 * NAME_FILE) read for going live. Each finding names the variable and never shows a secret's
 * value, length or part. It decides whether the network half may run at all: nothing is dialled
 * without MPS_LIVE=1, the credentials, and an address that may be the live provider.
 */
import { type AppEnv, collectEnv, ConfigError, isLoopbackUrl, isProduction, isSetDirectly, loadEnv } from '../../../../config/env';
import { check, type CheckResult } from './result';

export const STAND_IN_OPTION = '--allow-loopback-stand-in';

export interface LiveCheckOptions {
  json?: boolean;
  /** Accept a loopback MPS_BASE_URL as a stand-in for the provider (tests; refused under NODE_ENV=production). */
  allowLoopbackStandIn?: boolean;
}

export interface SettingsOutcome {
  checks: CheckResult[];
  /** The environment as the worker loads it, when it loads. */
  env?: AppEnv;
  baseUrl?: URL;
  /** The run accepted a loopback stand-in. */
  standIn: boolean;
  /** Whether the network checks may dial MPS_BASE_URL. */
  dial: boolean;
  /** Values never to print (the guard in result.ts). */
  secrets: string[];
}

const CREDENTIALS = ['MPS_SECRET_KEY', 'MPS_ACCESS_TOKEN', 'MPS_MERCHANT_REF'] as const;
const isOn = (v: string | undefined): boolean => v === '1' || v === 'true';

function environmentCheck(source: NodeJS.ProcessEnv): { check: CheckResult; env?: AppEnv } {
  try {
    const env = loadEnv(source);
    return { check: check('environment', 'configuration', 'pass', "the worker's environment loads (the rules `mpf worker` applies at start-up)"), env };
  } catch (e) {
    const text = e instanceof ConfigError ? e.message : `cannot be read (${(e as Error).message})`;
    return { check: check('environment', 'configuration', 'fail', `the worker would refuse to start: ${text}`) };
  }
}

function liveFlagCheck(raw: Record<string, string | undefined>): CheckResult {
  if (isOn(raw.MPS_LIVE)) return check('live_flag', 'MPS_LIVE', 'pass', '1: the worker dials MPS_BASE_URL as the live provider (every swap and link moves real money)');
  return check(
    'live_flag',
    'MPS_LIVE',
    'fail',
    `MPS_LIVE: is ${raw.MPS_LIVE === undefined ? 'not set' : 'not 1'}: going live sets MPS_LIVE=1 in the worker's environment, deliberately (without it the worker refuses a non-loopback MPS_BASE_URL)`,
  );
}

/** The provider address: set, a URL, not a simulator setting, not loopback (unless the stand-in is asked for and allowed). */
function baseUrlCheck(raw: Record<string, string | undefined>, opts: LiveCheckOptions): { check: CheckResult; url?: URL; standIn: boolean } {
  const fail = (summary: string, url?: URL) => ({ check: check('base_url', 'MPS_BASE_URL', 'fail', summary), standIn: false, ...(url ? { url } : {}) });
  if (raw.MPS_PROVIDER === 'simulator') return fail('MPS_PROVIDER: is simulator (the embedded simulator, no money moves): going live unsets it and sets MPS_BASE_URL');
  if (raw.MPS_SIMULATOR_UPSTREAM) return fail('MPS_SIMULATOR_UPSTREAM: names a simulator behind the forwarder: going live drops it and sets MPS_BASE_URL to the provider');
  if (!raw.MPS_BASE_URL) return fail("MPS_BASE_URL: is not set: set it to the provider's base address (https://…)");
  let url: URL;
  try {
    url = new URL(raw.MPS_BASE_URL);
  } catch {
    return fail('MPS_BASE_URL: is not a URL');
  }
  const shown = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  if (!isLoopbackUrl(url.href)) return { check: check('base_url', 'MPS_BASE_URL', 'pass', shown), url, standIn: false };
  if (!opts.allowLoopbackStandIn) {
    return fail(`${shown} is a loopback address: not the live provider (a simulator, a stand-in or a tunnel on this machine). Set MPS_BASE_URL to the provider's own https address`, url);
  }
  if (isProduction({ NODE_ENV: raw.NODE_ENV })) {
    return fail(`${STAND_IN_OPTION}: refused under NODE_ENV=production (it accepts a loopback stand-in, which is for tests only)`, url);
  }
  const summary = `${shown}: a loopback stand-in, accepted by ${STAND_IN_OPTION}: this run tests the checks, it proves nothing about the live route`;
  return { check: check('base_url', 'MPS_BASE_URL', 'warn', summary), url, standIn: true };
}

function credentialsCheck(raw: Record<string, string | undefined>, source: NodeJS.ProcessEnv): CheckResult {
  const missing = CREDENTIALS.filter((n) => !raw[n]);
  if (missing.length > 0) {
    const names = missing.map((n) => `${n} (or ${n}_FILE)`).join(', ');
    return check('credentials', 'credentials', 'fail', `${names}: not set: the worker needs all three of ${CREDENTIALS.join(', ')}, from a secrets store (NAME_FILE)`);
  }
  const from = CREDENTIALS.map((n) => `${n} from ${isSetDirectly(n, source) ? n : `${n}_FILE`}`).join(', ');
  const inline = CREDENTIALS.filter((n) => n !== 'MPS_MERCHANT_REF' && isSetDirectly(n, source));
  if (inline.length > 0) {
    return check('credentials', 'credentials', 'warn', `set (${from}; never printed); ${inline.join(' and ')} in the environment itself: prefer ${inline.map((n) => `${n}_FILE`).join(' and ')} from a secrets store`);
  }
  return check('credentials', 'credentials', 'pass', `set (${from}; never printed)`);
}

function nodeEnvCheck(raw: Record<string, string | undefined>): CheckResult {
  if (raw.NODE_ENV === 'production') return check('node_env', 'NODE_ENV', 'pass', 'production');
  return check(
    'node_env',
    'NODE_ENV',
    'warn',
    `is ${raw.NODE_ENV === undefined ? 'not set' : `"${raw.NODE_ENV}"`}, not production: the production refusals below are off for processes with this environment`,
  );
}

export function settingsChecks(source: NodeJS.ProcessEnv, opts: LiveCheckOptions): SettingsOutcome {
  let raw: Record<string, string | undefined>;
  try {
    raw = collectEnv(source);
  } catch (e) {
    const text = e instanceof ConfigError ? e.message : (e as Error).message;
    return { checks: [check('environment', 'configuration', 'fail', text)], standIn: false, dial: false, secrets: [] };
  }
  // Whole values and their parts (several signing secrets, a ring of keyId:key entries).
  const secrets = [...CREDENTIALS.map((n) => raw[n]), raw.MERCHANT_WEBHOOK_SECRET, raw.PAYLOAD_ENCRYPTION_KEYS, raw.GATEWAY_API_KEY, raw.CODEC_AUTH_TOKEN]
    .filter((s): s is string => Boolean(s))
    .flatMap((s) => [s, ...s.split(/[\s,]+/).flatMap((part) => [part, part.slice(part.indexOf(':') + 1)])]);
  const environment = environmentCheck(source);
  const base = baseUrlCheck(raw, opts);
  const checks = [environment.check, liveFlagCheck(raw), base.check, credentialsCheck(raw, source), nodeEnvCheck(raw)];
  const dial = checks.every((c) => c.status !== 'fail');
  return {
    checks,
    ...(environment.env ? { env: environment.env } : {}),
    ...(base.url ? { baseUrl: base.url } : {}),
    standIn: base.standIn,
    dial,
    secrets,
  };
}

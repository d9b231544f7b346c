/**
 * `mpf live check`: the preflight before going live, on the worker's own environment. The settings
 * first (settings.ts); then, only when they allow dialling, DNS and TLS (network.ts) and the one
 * provider call, the read-only categories GET (provider-call.ts), whose answer also tells the
 * simulator (its mark) and the provider's clock. Nothing that moves money is ever called.
 */
import { dnsCheck, tlsCheck } from './network';
import { goingLiveEnables } from './enables';
import { providerChecks } from './provider-call';
import { type CheckResult, type LiveReport, passed, reportLines, skipped, withoutSecrets } from './result';
import { type LiveCheckOptions, settingsChecks } from './settings';

const NETWORK_CHECKS = [
  ['dns', 'dns'],
  ['tls', 'tls'],
  ['categories', 'provider call'],
  ['simulator', 'not the simulator'],
  ['clock', 'clock'],
] as const;

const skipFrom = (index: number, why: string): CheckResult[] => NETWORK_CHECKS.slice(index).map(([id, label]) => skipped(id, label, why));

/** DNS, TLS, then the call; each only when the one before leaves nothing in the way. */
async function networkChecks(url: URL, standIn: boolean, call: () => Promise<CheckResult[]>): Promise<CheckResult[]> {
  const dns = await dnsCheck(url, standIn);
  if (dns.status === 'fail') return [dns, ...skipFrom(1, 'the host did not resolve to an address the live provider may have')];
  const tls = await tlsCheck(url);
  if (tls.status === 'fail' && url.protocol === 'https:') return [dns, tls, ...skipFrom(2, "no trusted TLS session (the worker's call would fail the same way)")];
  if (url.protocol !== 'https:' && !standIn) return [dns, tls, ...skipFrom(2, 'credentials are never sent over plain http to another host')];
  return [dns, tls, ...(await call())];
}

export async function liveCheck(opts: LiveCheckOptions, source: NodeJS.ProcessEnv = process.env): Promise<{ report: LiveReport; secrets: string[] }> {
  const settings = settingsChecks(source, opts);
  const { env, baseUrl } = settings;
  const checks = [...settings.checks];
  if (settings.dial && env && baseUrl) {
    checks.push(...(await networkChecks(baseUrl, settings.standIn, () => providerChecks(env, baseUrl.href))));
  } else {
    checks.push(...skipFrom(0, 'the settings above must pass first (nothing is dialled until they do)'));
  }
  const report: LiveReport = {
    ok: passed(checks),
    ...(baseUrl ? { base_url: `${baseUrl.origin}${baseUrl.pathname.replace(/\/+$/, '')}` } : {}),
    stand_in: settings.standIn,
    checked_at: new Date().toISOString(),
    checks,
    enables: env ? goingLiveEnables(env) : [],
  };
  return { report, secrets: settings.secrets };
}

/** Runs the check and prints it; returns the exit code (0 only when no check failed or was left unrun). */
export async function runLiveCheck(opts: LiveCheckOptions): Promise<number> {
  const { report, secrets } = await liveCheck(opts);
  const text = opts.json
    ? JSON.stringify(report, (_key, value: unknown) => (typeof value === 'string' ? withoutSecrets(value, secrets) : value), 2)
    : withoutSecrets(reportLines(report).join('\n'), secrets);
  process.stdout.write(`${text}\n`);
  return report.ok ? 0 : 1;
}

/**
 * One check of `mpf live check` and how the run prints: a line per check (✓ passed, ! passed with
 * something to look at, ✗ failed, - not run because an earlier check failed), or one JSON object.
 * The exit code is 0 only when no check failed or was left unrun.
 */

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip';

export interface CheckResult {
  /** Stable id, the key of the JSON output (`dns`, `tls`, `clock` …). */
  id: string;
  /** What the human line calls it. */
  label: string;
  status: CheckStatus;
  /** One line: what was found, and for a failure what to do; never a secret. */
  summary: string;
  /** What the check measured, for --json (addresses, certificate, skew). */
  details?: Record<string, unknown>;
}

export interface LiveReport {
  ok: boolean;
  /** The provider's base URL as configured (no credentials can be in it), or undefined. */
  base_url?: string;
  /** Whether the run accepted a loopback stand-in (--allow-loopback-stand-in). */
  stand_in: boolean;
  checked_at: string;
  checks: CheckResult[];
  /** What going live with this environment turns on (empty when the environment does not load). */
  enables: string[];
}

export const check = (id: string, label: string, status: CheckStatus, summary: string, details?: Record<string, unknown>): CheckResult => ({
  id,
  label,
  status,
  summary,
  ...(details ? { details } : {}),
});

/** A check that did not run, and why. */
export const skipped = (id: string, label: string, why: string): CheckResult => check(id, label, 'skip', `not run: ${why}`);

export const passed = (checks: readonly CheckResult[]): boolean => checks.every((c) => c.status === 'pass' || c.status === 'warn');

const MARK: Record<CheckStatus, string> = { pass: '✓', warn: '!', fail: '✗', skip: '-' };

export function reportLines(r: LiveReport): string[] {
  const width = Math.max(...r.checks.map((c) => c.label.length));
  const lines = [`mpf live check: ${r.base_url ?? '(no MPS_BASE_URL)'}${r.stand_in ? ' (a loopback stand-in, not the live provider)' : ''}`];
  for (const c of r.checks) lines.push(`${MARK[c.status]} ${c.label.padEnd(width)}  ${c.summary}`);
  if (r.enables.length > 0) {
    lines.push('', 'Going live with this environment:');
    for (const e of r.enables) lines.push(`  - ${e}`);
  }
  const count = (s: CheckStatus) => r.checks.filter((c) => c.status === s).length;
  const warnings = count('warn') ? ` (${count('warn')} warning${count('warn') > 1 ? 's' : ''}: see the ! lines)` : '';
  lines.push(
    '',
    r.ok
      ? `✓ ready: every check passed${warnings}`
      : `✗ not ready: ${count('fail')} failed${count('skip') ? `, ${count('skip')} not run` : ''}${warnings}`,
  );
  return lines;
}

/**
 * The text with every secret replaced, a last guard on what is printed: the checks never put a
 * secret in a line, and this keeps one that slipped into an error message off the terminal.
 */
export function withoutSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of [...secrets].sort((a, b) => b.length - a.length)) {
    if (s.length >= 6) out = out.split(s).join('[redacted]');
  }
  return out;
}

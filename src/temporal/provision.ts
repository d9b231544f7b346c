/**
 * Runs scripts/provision-temporal.sh and returns the Temporal CLI path, or throws. Its progress
 * (stderr) goes straight to ours, so a first run that builds the CLI shows the build as it goes
 * instead of one line for minutes.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

export const PROJECT_ROOT = path.resolve(__dirname, '..', '..');

export class TemporalProvisioningError extends Error {
  override name = 'TemporalProvisioningError';
}

export function provisionTemporalCli(env: NodeJS.ProcessEnv = process.env): string {
  const script = path.join(PROJECT_ROOT, 'scripts', 'provision-temporal.sh');
  const r = spawnSync('bash', ['--norc', '--noprofile', script], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = (r.stdout ?? '').trim().split('\n').filter(Boolean);
  if (r.status !== 0 || lines.length === 0) {
    throw new TemporalProvisioningError(r.error?.message ?? 'no Temporal CLI could be provisioned (scripts/provision-temporal.sh says why, above)');
  }
  return lines[lines.length - 1];
}

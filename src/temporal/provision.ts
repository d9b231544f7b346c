/** Runs scripts/provision-temporal.sh and returns the Temporal CLI path, or throws its message. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

export const PROJECT_ROOT = path.resolve(__dirname, '..', '..');

export class TemporalProvisioningError extends Error {
  override name = 'TemporalProvisioningError';
}

export function provisionTemporalCli(env: NodeJS.ProcessEnv = process.env): string {
  const script = path.join(PROJECT_ROOT, 'scripts', 'provision-temporal.sh');
  const r = spawnSync('bash', ['--norc', '--noprofile', script], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = (r.stdout ?? '').trim().split('\n').filter(Boolean);
  if (r.status !== 0 || lines.length === 0) {
    throw new TemporalProvisioningError((r.stderr || r.error?.message || 'provision-temporal.sh failed').trim());
  }
  return lines[lines.length - 1];
}

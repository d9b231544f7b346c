/**
 * Runs scripts/provision-cluster.sh (builds and caches temporal-server, temporal-sql-tool and the
 * UI server; finds or installs Debian's PostgreSQL) and returns the paths it prints. Its progress
 * (a first build takes minutes) goes to our stderr; a failure throws the script's message.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/temporal/provision';

export interface ClusterBinaries {
  temporalServer: string;
  sqlTool: string;
  /** .../schema/postgresql/v12 (temporal/versioned and visibility/versioned under it). */
  schemaDir: string;
  uiServer: string;
  /** PostgreSQL's server binaries: initdb, postgres, pg_isready. */
  pgBinDir: string;
}

export class ClusterProvisioningError extends Error {
  override name = 'ClusterProvisioningError';
}

const KEYS = {
  TEMPORAL_SERVER: 'temporalServer',
  TEMPORAL_SQL_TOOL: 'sqlTool',
  TEMPORAL_SCHEMA_DIR: 'schemaDir',
  TEMPORAL_UI_SERVER: 'uiServer',
  PG_BINDIR: 'pgBinDir',
} as const;

export function provisionCluster(opts: { quiet?: boolean } = {}): ClusterBinaries {
  const script = path.join(PROJECT_ROOT, 'scripts', 'provision-cluster.sh');
  const r = spawnSync('bash', ['--norc', '--noprofile', script], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', opts.quiet ? 'pipe' : 'inherit'],
  });
  if (r.status !== 0) {
    throw new ClusterProvisioningError(`scripts/provision-cluster.sh failed (${r.status ?? r.signal}): ${(r.stderr || r.error?.message || 'see its output above').trim()}`);
  }
  const found: Partial<ClusterBinaries> = {};
  for (const line of r.stdout.split('\n')) {
    const m = /^([A-Z_]+)=(.+)$/.exec(line.trim());
    const key = m && KEYS[m[1] as keyof typeof KEYS];
    if (key) found[key] = m[2];
  }
  const missing = Object.entries(KEYS).filter(([, k]) => !found[k]).map(([name]) => name);
  if (missing.length) throw new ClusterProvisioningError(`scripts/provision-cluster.sh printed no ${missing.join(', ')}`);
  return found as ClusterBinaries;
}

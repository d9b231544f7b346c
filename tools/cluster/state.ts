/**
 * The state directory of a native topology (default .data/cluster, git-ignored):
 *
 *   cluster.pid      the pid of the running `mpf cluster up` (what `mpf cluster down` signals)
 *   cluster.json     run id, status, every address and pid (no secrets)
 *   cluster.env      client settings for a shell: addresses and NAME_FILE paths (no secret values)
 *   secrets/         one file per secret, 0600 (as compose's ./secrets)
 *   tls/             the private CA and one certificate directory per component, 0700/0600
 *   logs/            one log per process and job
 *   temporal/ ui/    the servers' config files (0600: they hold the database password / codec URL)
 *   idp/             the identity provider's config file (0600: its signing key and client secrets)
 *   postgres/        PostgreSQL's own directory (owned by the user it runs as)
 *   ports.json       the ports of the last run, taken again by `up --keep-data` (ports.ts)
 *   simulator/       the simulator's records (state.json), kept with --keep-data
 */
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/temporal/provision';
import { isRunning } from './processes';

export const DEFAULT_STATE_DIR = path.join(PROJECT_ROOT, '.data', 'cluster');

export interface ClusterInfo {
  runId: string;
  status: 'starting' | 'ready' | 'stopping' | 'stopped' | 'failed';
  /** The `mpf cluster up` process. */
  pid: number;
  stateDir: string;
  startedAt: string;
  readyInMs?: number;
  keepData: boolean;
  temporal?: { address: string; httpAddress: string; pid: number; namespace: string; taskQueue: string; historyShards: number; version: string };
  ui?: { url: string; pid: number; version: string };
  postgres?: { host: string; port: number; pid: number; dataDir: string; user: string; binDir: string };
  simulator?: { url: string; checkoutUrl: string; pid: number };
  /** The identity provider (idp.ts): its issuer, JWKS and token endpoint. */
  idp?: { issuer: string; pid: number; jwksUrl: string; tokenUrl: string };
  /** With authorisation on: Temporal Web's codec endpoint, which authorises the person's token (codec.ts). */
  codec?: { url: string; pid: number };
  /** Every call to the Temporal API is authorised by the IdP's tokens (MPF_CLUSTER_AUTH=1). */
  auth?: boolean;
  gateways: Array<{ name: string; url: string; pid: number; metricsUrl?: string }>;
  workers: Array<{ name: string; pid: number; metricsUrl?: string }>;
  secretsDir: string;
  /** The certificates (tls.ts): ca/, and one directory per component. */
  tlsDir: string;
  envFile: string;
  logDir: string;
  /** Each long-running component: its pid, its command line and its log (restart one: `mpf cluster restart <name>`). */
  components?: Record<string, { pid: number; command: string[]; log: string }>;
}

export const files = (stateDir: string) => ({
  pid: path.join(stateDir, 'cluster.pid'),
  info: path.join(stateDir, 'cluster.json'),
  env: path.join(stateDir, 'cluster.env'),
  logs: path.join(stateDir, 'logs'),
  /** The ports each component had (ports.ts): the same again after `up --keep-data`. */
  ports: path.join(stateDir, 'ports.json'),
  /** The simulator's swaps, links and ledger (it stands for a provider that persists). */
  simulatorState: path.join(stateDir, 'simulator', 'state.json'),
});

export function readInfo(stateDir: string): ClusterInfo | undefined {
  try {
    return JSON.parse(fs.readFileSync(files(stateDir).info, 'utf8')) as ClusterInfo;
  } catch {
    return undefined;
  }
}

export function writeInfo(info: ClusterInfo): void {
  const file = files(info.stateDir).info;
  fs.writeFileSync(`${file}.tmp`, `${JSON.stringify(info, null, 2)}\n`);
  fs.renameSync(`${file}.tmp`, file);
}

/** The pid of a running `mpf cluster up` of this state dir, if there is one. */
export function runningUpPid(stateDir: string): number | undefined {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(files(stateDir).pid, 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !isRunning(pid)) return undefined;
  // A recycled pid is some other program: only a process of ours counts.
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    if (!cmdline.includes('cluster') || !cmdline.includes('up')) return undefined;
  } catch {
    return undefined;
  }
  return pid;
}

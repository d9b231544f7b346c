/**
 * `mpf cluster up|down|restart|login`: the production topology (docker-compose.yml's services) natively on
 * 127.0.0.1. The launcher (tools/cluster: process supervision, PostgreSQL, the Temporal server) is an
 * operator's and developer's tool, not part of the library: it lives outside src/, so the published
 * package (dist/, built from src/) has none of it, and it is loaded here only from a source
 * checkout, only when one of these commands runs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { PROJECT_ROOT } from '../../../temporal/provision';

function parseReplicas(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 16) throw new InvalidArgumentError('must be a whole number from 1 to 16');
  return n;
}

const DEFAULT_STATE_DIR = path.join(PROJECT_ROOT, '.data', 'cluster');

interface ClusterMain {
  runClusterUp(o: { workers: number; gateways: number; stateDir: string; keepData: boolean; appEnv: Record<string, string> }): Promise<number>;
  runClusterDown(o: { stateDir: string }): Promise<number>;
  runClusterRestart(o: { stateDir: string; component: string }): Promise<number>;
}

/** The flow settings `--app-env` may set (tools/cluster/topology.ts FLOW_SETTINGS; listed here so --help loads no launcher code). */
const APP_ENV_NAMES = ['SWAP_SETTLE_WAIT_SECONDS', 'SWAP_NOTIFICATION_WAIT_SECONDS', 'SWAP_PIN_MAX_ATTEMPTS', 'LINK_LIFETIME_SECONDS', 'LINK_LATE_NOTIFICATION_GRACE_SECONDS', 'LOG_LEVEL', 'MERCHANT_WEBHOOK_ALLOWED_HOSTS'];

function collectAppEnv(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const i = value.indexOf('=');
  const name = i > 0 ? value.slice(0, i) : '';
  if (!APP_ENV_NAMES.includes(name)) throw new InvalidArgumentError(`must be NAME=VALUE with NAME one of ${APP_ENV_NAMES.join(', ')}`);
  return { ...previous, [name]: value.slice(i + 1) };
}

interface ClusterLogin {
  runClusterLogin(o: { user: string; stateDir: string; passwordFile?: string }): Promise<number>;
}

/** The people of the cluster's identity provider (tools/cluster/idp.ts IDP_PEOPLE; listed here so --help loads no launcher code). */
const LOGIN_USERS = ['viewer', 'operator', 'administrator', 'support', 'finance'];

function parseUser(value: string): string {
  if (!LOGIN_USERS.includes(value)) throw new InvalidArgumentError(`must be one of ${LOGIN_USERS.join(', ')}`);
  return value;
}

/** The launcher's sources (a checkout run through tsx); absent from the published package. */
function main(): ClusterMain {
  return launcher<ClusterMain>('main.ts');
}

function launcher<T>(file: string): T {
  const sources = path.join(PROJECT_ROOT, 'tools', 'cluster', file);
  if (!fs.existsSync(sources)) {
    throw new InvalidArgumentError(
      'mpf cluster runs from a source checkout of merchant-payment-flows (git clone, npm ci, then `npx mpf cluster up`); the published package holds the library and the CLI only',
    );
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(sources) as T;
}

export function clusterCommand(): Command {
  const cluster = new Command('cluster').description(
    "the production topology natively on 127.0.0.1: PostgreSQL, Temporal server + Web, simulator, workers, gateways (docker-compose.yml's services)",
  );
  cluster
    .command('up')
    .description('start it in the foreground, print every address and "cluster ready"; Ctrl-C stops everything')
    .option('--workers <n>', 'worker processes (replicas sharing the task queue)', parseReplicas, 2)
    .option('--gateways <n>', 'gateway processes (stateless replicas)', parseReplicas, 2)
    .option('--state-dir <dir>', 'logs, secrets, config files and the database', DEFAULT_STATE_DIR)
    .option('--keep-data', "keep PostgreSQL's data, the simulator's records, the secrets, certificates and ports for the next run")
    .option('--app-env <NAME=VALUE>', `a flow setting for every worker and gateway, repeatable (${APP_ENV_NAMES.join(', ')})`, collectAppEnv)
    .action(async (opts: { workers: number; gateways: number; stateDir: string; keepData?: boolean; appEnv?: Record<string, string> }) => {
      // Everything it started is stopped by now: exit without waiting for idle keep-alive sockets.
      process.exit(await main().runClusterUp({ ...opts, keepData: Boolean(opts.keepData), appEnv: opts.appEnv ?? {} }));
    });
  cluster
    .command('restart')
    .description('restart one component of a running `mpf cluster up` (worker-1, gateway-2, simulator, temporal, temporal-ui, postgresql) as it was started')
    .argument('<component>', 'its name, as `mpf cluster up` printed it')
    .option('--state-dir <dir>', 'the state dir the cluster was started with', DEFAULT_STATE_DIR)
    .action(async (component: string, opts: { stateDir: string }) => {
      process.exit(await main().runClusterRestart({ ...opts, component }));
    });
  cluster
    .command('down')
    .description('stop the `mpf cluster up` of a state dir and wait until none of its processes is left')
    .option('--state-dir <dir>', 'the state dir the cluster was started with', DEFAULT_STATE_DIR)
    .action(async (opts: { stateDir: string }) => {
      process.exit(await main().runClusterDown(opts));
    });
  cluster
    .command('login')
    .description(
      "sign a person in at the cluster's identity provider and keep their access token in <state dir>/tokens/<user> (0600); " +
        'cluster.env reads the operator\'s into TEMPORAL_API_KEY (temporal, mpf) and MPF_ACCESS_TOKEN (the gateway\'s operator routes). ' +
        'The password is read from stdin (a hidden prompt on a terminal) or --password-file, never from an option; the token is never printed',
    )
    .requiredOption('--user <name>', `who signs in: ${LOGIN_USERS.join(', ')}`, parseUser)
    .option('--state-dir <dir>', 'the state dir of the running cluster', DEFAULT_STATE_DIR)
    .option('--password-file <file>', "a file holding the person's password (its first line); default: stdin")
    .action(async (opts: { user: string; stateDir: string; passwordFile?: string }) => {
      process.exit(await launcher<ClusterLogin>('login.ts').runClusterLogin(opts));
    });
  return cluster;
}

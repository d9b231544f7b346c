/**
 * `mpf cluster up|down`: the production topology (docker-compose.yml's services) natively on
 * 127.0.0.1. The launcher (src/cluster: process supervision, PostgreSQL, the Temporal server) is an
 * operator's and developer's tool, not part of the library: it is left out of the published
 * package's dist/ (tsconfig.build.json) and loaded here only from a source checkout, only when one
 * of these commands runs.
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
  runClusterUp(o: { workers: number; gateways: number; stateDir: string; keepData: boolean }): Promise<number>;
  runClusterDown(o: { stateDir: string }): Promise<number>;
}

/** The launcher's sources (a checkout run through tsx); absent from the published package. */
function main(): ClusterMain {
  const sources = path.join(PROJECT_ROOT, 'src', 'cluster', 'main.ts');
  if (!fs.existsSync(sources)) {
    throw new InvalidArgumentError(
      'mpf cluster runs from a source checkout of merchant-payment-flows (git clone, npm ci, then `npx mpf cluster up`); the published package holds the library and the CLI only',
    );
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(sources) as ClusterMain;
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
    .option('--keep-data', "keep PostgreSQL's data (and the secrets that go with it) for the next run")
    .action(async (opts: { workers: number; gateways: number; stateDir: string; keepData?: boolean }) => {
      // Everything it started is stopped by now: exit without waiting for idle keep-alive sockets.
      process.exit(await main().runClusterUp({ ...opts, keepData: Boolean(opts.keepData) }));
    });
  cluster
    .command('down')
    .description('stop the `mpf cluster up` of a state dir and wait until none of its processes is left')
    .option('--state-dir <dir>', 'the state dir the cluster was started with', DEFAULT_STATE_DIR)
    .action(async (opts: { stateDir: string }) => {
      process.exit(await main().runClusterDown(opts));
    });
  return cluster;
}

/**
 * `mpf simulator`: the provider simulator as its own process. Prints `listening on URL` once it is
 * ready (and its checkout's address on a second line); stops cleanly on SIGINT/SIGTERM.
 */
import { Command } from 'commander';
import { loadEnv } from '../../../config/env';
import type * as SimulatorMain from '../../../simulator/main';
import { parseCount, parseHostList, parseHttpUrl, parsePort, parsePositive } from '../options';

interface SimulatorCommandOptions {
  port: number;
  checkoutPort: number;
  host: string;
  expiresIn?: number;
  seed?: number;
  checkoutPublicUrl?: string;
  notificationAllowHosts?: string[];
  stateFile?: string;
}

export function simulatorCommand(): Command {
  return new Command('simulator')
    .description('run the provider simulator (never the live provider); prints "listening on URL"')
    .option('--port <n>', 'port of the provider API, 0 = a free port', parsePort, 0)
    .option('--checkout-port <n>', 'port of the hosted checkout, 0 = a free port', parsePort, 0)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--expires-in <seconds>', 'swap confirmation window (expires_in_seconds) it hands out', parsePositive)
    .option('--seed <n>', 'seed of every random choice (faults, references)', parseCount)
    .option('--checkout-public-url <url>', 'base of pay_link when browsers reach the checkout by another address (default: SIMULATOR_CHECKOUT_PUBLIC_URL)', parseHttpUrl)
    .option('--notification-allow-hosts <hosts>', 'comma-separated non-loopback hosts it may send notifications to (default: SIMULATOR_NOTIFICATION_ALLOW_HOSTS)', parseHostList)
    .option('--state-file <path>', 'keep swaps, links and the ledger in this file across restarts, as a provider does (default: SIMULATOR_STATE_PATH; unset: memory only)')
    .action(runSimulator);
}

async function runSimulator(opts: SimulatorCommandOptions): Promise<void> {
  // Loaded only when it runs: no other command loads the simulator.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { runSimulatorCli } = require('../../../simulator/main') as typeof SimulatorMain;
  // The simulator accepts the credentials the worker sends (MPS_* or MPS_*_FILE); unset, its
  // defaults, which the worker also uses with MPS_PROVIDER=simulator.
  const env = loadEnv();
  const sim = await runSimulatorCli({
    port: opts.port,
    checkoutPort: opts.checkoutPort,
    host: opts.host,
    ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
    ...(opts.expiresIn !== undefined ? { swapExpiresInSeconds: opts.expiresIn } : {}),
    ...(env.MPS_SECRET_KEY ? { secretKey: env.MPS_SECRET_KEY } : {}),
    ...(env.MPS_ACCESS_TOKEN ? { accessToken: env.MPS_ACCESS_TOKEN } : {}),
    ...(env.MPS_MERCHANT_REF ? { merchantRef: env.MPS_MERCHANT_REF } : {}),
    checkoutPublicUrl: opts.checkoutPublicUrl ?? env.SIMULATOR_CHECKOUT_PUBLIC_URL,
    notificationAllowHosts: opts.notificationAllowHosts ?? env.SIMULATOR_NOTIFICATION_ALLOW_HOSTS,
    ...((opts.stateFile ?? env.SIMULATOR_STATE_PATH) ? { stateFile: opts.stateFile ?? env.SIMULATOR_STATE_PATH } : {}),
  });
  await sim.stopped;
}

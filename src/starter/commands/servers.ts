/**
 * `mpf gateway` and `mpf simulator`: the server subcommands. Each prints exactly one line
 * `listening on http://127.0.0.1:PORT` once it is ready (the simulator adds its checkout's
 * address on a second line) and stops cleanly on SIGINT/SIGTERM.
 */
import { loadEnv } from '../../config/env';
import type * as SimulatorMain from '../../simulator/main';
import type { SimulatorCommandOptions } from '../cli';
import type * as Gateway from '../gateway';

export async function runGateway(opts: { port?: number; host?: string }): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { runGatewayMain } = require('../gateway') as typeof Gateway;
  await runGatewayMain({
    ...(opts.port !== undefined ? { port: opts.port } : {}),
    ...(opts.host !== undefined ? { host: opts.host } : {}),
  });
}

export async function runSimulator(opts: SimulatorCommandOptions): Promise<void> {
  // The simulator accepts the credentials the worker sends (MPS_* or MPS_*_FILE); unset, its
  // defaults, which the worker also uses when MPS_BASE_URL is unset.
  const env = loadEnv();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { runSimulatorCli } = require('../../simulator/main') as typeof SimulatorMain;
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
  });
  await sim.stopped;
}

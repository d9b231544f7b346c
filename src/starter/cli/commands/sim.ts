/**
 * `mpf sim pay|fail|notify <payment_ref>` (the `stripe trigger` of the provider simulator):
 * provider outcomes from the terminal through the simulator's control API (/_sim, loopback only).
 * The simulator is MPF_SIMULATOR_URL, else MPS_BASE_URL (`--sim-url` wins); never a non-loopback
 * address: these commands never talk to the live provider.
 */
import { Command, InvalidArgumentError } from 'commander';
import { cliSetting } from '../../../config/cli-env';
import { ConfigError, isLoopbackUrl, loadEnv } from '../../../config/env';
import type * as ControlClient from '../../../simulator/control-client';
import { JSON_HELP, parseHttpUrl } from '../options';
import { printJson } from '../output';

interface SimOptions {
  simUrl?: string;
  json?: boolean;
}

const STATUSES = ['successful', 'failed', 'pending'] as const;
type NotifyStatus = (typeof STATUSES)[number];

function parseStatus(value: string): NotifyStatus {
  if (!(STATUSES as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${STATUSES.join(', ')}`);
  return value as NotifyStatus;
}

export function simCommand(): Command {
  const sim = new Command('sim').description("trigger provider outcomes on the simulator (its /_sim control API): a payment, a failure, a notification");
  const common = (c: Command): Command =>
    c
      .argument('<payment_ref>', "the link's (or swap's) payment_ref, as `mpf link status` shows it")
      .option('--sim-url <url>', 'the simulator (default MPF_SIMULATOR_URL, else MPS_BASE_URL)', parseHttpUrl)
      .option('--json', JSON_HELP);
  common(sim.command('pay').description('the customer completes the bank transfer: the link is paid and the provider notifies the flow')).action(
    (ref: string, opts: SimOptions) => settle(ref, 'complete', opts),
  );
  common(sim.command('fail').description('the payment fails: the link is failed and the provider notifies the flow')).action((ref: string, opts: SimOptions) =>
    settle(ref, 'fail', opts),
  );
  common(
    sim
      .command('notify')
      .description("send the provider's notification for a link or swap again (a new notification id), state unchanged")
      .option('--status <status>', `successful, failed or pending (default: what its state implies)`, parseStatus),
  ).action((ref: string, opts: SimOptions & { status?: NotifyStatus }) => notify(ref, opts));
  return sim;
}

function control(opts: SimOptions): ControlClient.SimulatorControl {
  const url = opts.simUrl ?? cliSetting('MPF_SIMULATOR_URL') ?? loadEnv().MPS_BASE_URL;
  if (!url) throw new ConfigError('MPF_SIMULATOR_URL: is not set: give the simulator\'s address (--sim-url, MPF_SIMULATOR_URL or MPS_BASE_URL), e.g. http://127.0.0.1:8090');
  if (!isLoopbackUrl(url)) throw new ConfigError(`the simulator address ${new URL(url).host} is not loopback: mpf sim only talks to a local simulator, never the live provider`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { createControlClient } = require('../../../simulator/control-client') as typeof ControlClient;
  return createControlClient(url);
}

async function settle(paymentRef: string, outcome: 'complete' | 'fail', opts: SimOptions): Promise<void> {
  const c = control(opts);
  const r = outcome === 'complete' ? await c.completeLink(paymentRef) : await c.failLink(paymentRef);
  if (opts.json) printJson(r);
  else process.stdout.write(`payment ${r.payment_ref}: ${r.state} (the provider notifies the flow; the customer is sent to ${r.redirect_to})\n`);
}

async function notify(paymentRef: string, opts: SimOptions & { status?: NotifyStatus }): Promise<void> {
  const r = await control(opts).notify(paymentRef, opts.status);
  if (opts.json) printJson(r);
  else process.stdout.write(`notification ${r.notification_id} (${r.status}) for ${r.ref} sent to its notification_url\n`);
}

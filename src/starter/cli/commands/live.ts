/**
 * `mpf live check`: the read-only preflight before going live, run with the worker's environment
 * (MPS_BASE_URL, MPS_LIVE, the credentials or their _FILE forms). It makes one provider call, the
 * categories GET, through the worker's own client; checks DNS, TLS and the clock against the
 * provider's Date; refuses a simulator (by the mark on its answers) and a loopback address; and
 * prints what going live with this environment turns on. The checks are in ./live/.
 */
import { Command } from 'commander';
import { JSON_HELP } from '../options';
import type * as LiveCheck from './live/check';

export function liveCommand(): Command {
  const live = new Command('live').description('going live: a read-only preflight against the live provider');
  live
    .command('check')
    .description(
      "check the worker's environment against the live provider: settings, DNS, TLS, one read-only categories call (never a money call), " +
        'the clock against its Date, not a simulator; prints what going live turns on. Exit 0 only when every check passed',
    )
    .option('--json', JSON_HELP)
    .option(
      '--allow-loopback-stand-in',
      'for tests: accept a loopback MPS_BASE_URL as a stand-in for the provider (refused under NODE_ENV=production; a simulator is still refused)',
    )
    .action(async (opts: { json?: boolean; allowLoopbackStandIn?: boolean }) => {
      // The provider client loads when the command runs, not when the program is built.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { runLiveCheck } = require('./live/check') as typeof LiveCheck;
      process.exitCode = await runLiveCheck(opts);
    });
  return live;
}

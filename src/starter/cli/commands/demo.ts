/** `mpf demo [--once]`: the whole stack on this machine and both flows end to end (demo/run.ts). */
import { Command } from 'commander';
import type * as Demo from '../../demo/run';

export function demoCommand(): Command {
  return new Command('demo')
    .description('embedded Temporal dev server + simulator + worker + gateway, both flows end to end')
    .option('--once', 'run the flows once and exit (0 only if both succeeded)')
    .action(async (opts: { once?: boolean }) => {
      // Loaded only when it runs: no other command loads the demo, the simulator or the worker.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { runDemo } = require('../../demo/run') as typeof Demo;
      process.exitCode = await runDemo({ once: Boolean(opts.once) });
      // Everything it started is stopped: a handle some library left open does not keep the
      // process (and a Ctrl-C'd demo) waiting. Unref'd: a process that is done exits at once.
      setTimeout(() => process.exit(), 2_000).unref();
    });
}

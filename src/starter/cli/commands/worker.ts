/** `mpf worker`: the Temporal worker process (worker-main.ts), configured by the environment. */
import { Command } from 'commander';
import type * as WorkerMain from '../../../worker-main';

export function workerCommand(): Command {
  return new Command('worker')
    .description('run the Temporal worker (workflows + provider activities); configured by environment')
    .action(async () => {
      // Loaded only when it runs: no other command loads the worker runtime.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { runWorkerMain } = require('../../../worker-main') as typeof WorkerMain;
      await runWorkerMain();
    });
}

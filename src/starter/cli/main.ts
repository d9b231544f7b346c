/** `mpf` (bin/mpf.cjs): runs the program; an error becomes one `mpf: …` line on stderr and exit code 1. */
import { formatCliError } from './errors';
import { buildProgram } from './program';

export function main(argv: string[]): void {
  buildProgram()
    .parseAsync(argv)
    .catch((err: unknown) => {
      console.error(`mpf: ${formatCliError(err)}`);
      process.exitCode = 1;
      // An abandoned call (e.g. no worker answered in time) may keep the event loop alive: once
      // the error is out, don't wait for it. Unref'd: a process that is done exits at once.
      setTimeout(() => process.exit(1), 1_000).unref();
    });
}

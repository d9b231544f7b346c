/** `mpf` (bin/mpf.cjs): runs the program; an error becomes one `mpf: …` line on stderr and exit code 1 (2 for an ambiguous setting). */
import { formatCliError } from './errors';
import { buildProgram } from './program';

export function main(argv: string[]): void {
  buildProgram()
    .parseAsync(argv)
    .catch((err: unknown) => {
      console.error(`mpf: ${formatCliError(err)}`);
      // 2: the command was not run as given (two credentials where it takes one); 1: it failed.
      const code = (err as { exitCode?: unknown } | undefined)?.exitCode === 2 ? 2 : 1;
      process.exitCode = code;
      // An abandoned call (e.g. no worker answered in time) may keep the event loop alive: once
      // the error is out, don't wait for it. Unref'd: a process that is done exits at once.
      setTimeout(() => process.exit(code), 1_000).unref();
    });
}

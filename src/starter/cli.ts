/**
 * `mpf`, the command line of merchant-payment-flows (commander: subcommands, help and argument
 * validation without hand-written parsing).
 */
import { Command, InvalidArgumentError } from 'commander';

/**
 * Loads a subcommand's module only when it runs (a worker need not load the gateway). `require`
 * rather than `import()` so that it works both from the sources (tsx's CJS hook) and from dist/.
 */
function lazy<T>(id: string): T {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(id) as T;
}

export function parsePort(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number 0-65535');
  return n;
}

export function buildProgram(): Command {
  const program = new Command('mpf')
    .description('Merchant payment flows on Temporal: swaps, payment links, categories')
    .showHelpAfterError();

  program
    .command('worker')
    .description('run the Temporal worker (workflows + provider activities); configured by environment')
    .action(async () => {
      await lazy<typeof import('../worker-main')>('../worker-main').runWorkerMain();
    });

  program
    .command('demo')
    .description('embedded Temporal dev server + simulator + worker + gateway, both flows end to end')
    .option('--once', 'run the flows once and exit (0 only if both succeeded)')
    .action(async (opts: { once?: boolean }) => {
      const { runDemo } = lazy<typeof import('./demo')>('./demo');
      process.exitCode = await runDemo({ once: Boolean(opts.once) });
    });

  return program;
}

export function main(argv: string[]): void {
  buildProgram()
    .parseAsync(argv)
    .catch((err: unknown) => {
      console.error(`mpf: ${err instanceof Error ? err.message : String(err)}`);
      process.exitCode = 1;
    });
}

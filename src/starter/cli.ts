/**
 * `mpf`, the command line of merchant-payment-flows (commander: subcommands, help and argument
 * validation without hand-written parsing). This file only declares the commands; each action
 * loads its module (./commands/*) when it runs.
 *
 *   mpf worker | gateway [--port N] [--host H] | simulator [--port N] [--checkout-port N] …
 *   mpf swap start|pin|status|cancel   mpf link create|status   mpf categories [--tree]
 *   mpf demo [--once]
 */
import { Command, InvalidArgumentError } from 'commander';
import type * as CategoriesCommands from './commands/categories';
import type * as CodecCommands from './commands/codec';
import { formatCliError } from './commands/errors';
import type * as LinkCommands from './commands/link';
import type * as ServerCommands from './commands/servers';
import type * as SwapCommands from './commands/swap';
import type * as Demo from './demo';
import type * as WorkerMain from '../worker-main';

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
  if (!/^\d+$/.test(value) || !Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number 0-65535');
  return n;
}

/** A non-negative integer (seconds, seeds). */
export function parseCount(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('must be a whole number such as 30');
  return n;
}

/** A positive whole number (seconds to wait). */
export function parsePositive(value: string): number {
  const n = parseCount(value);
  if (n < 1) throw new InvalidArgumentError('must be at least 1');
  return n;
}

/** A positive decimal amount as typed ("100", "12.50"); the contract checks bounds and decimals. */
export function parseAmount(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value.trim())) throw new InvalidArgumentError('must be a positive number such as 100 or 12.50');
  return Number(value.trim());
}

export function parseHttpUrl(value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new InvalidArgumentError('must be an absolute http(s) URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new InvalidArgumentError('must be an absolute http(s) URL');
  return value;
}

export function parseHostList(value: string): string[] {
  return value.split(',').map((h) => h.trim()).filter(Boolean);
}

// Type-only imports above are erased: these requires are the only loads, each at its action.
const servers = () => lazy<typeof ServerCommands>('./commands/servers');
const swaps = () => lazy<typeof SwapCommands>('./commands/swap');
const links = () => lazy<typeof LinkCommands>('./commands/link');
const categories = () => lazy<typeof CategoriesCommands>('./commands/categories');
const JSON_HELP = 'print machine-readable JSON instead of text';
const WAIT_HELP = 'seconds to wait for the worker before giving up (default 60)';

export function buildProgram(): Command {
  const program = new Command('mpf')
    .description('Merchant payment flows on Temporal: swaps, payment links, categories')
    .showSuggestionAfterError(true);

  // ---- servers --------------------------------------------------------------------------------

  program
    .command('worker')
    .description('run the Temporal worker (workflows + provider activities); configured by environment')
    .action(async () => {
      await lazy<typeof WorkerMain>('../worker-main').runWorkerMain();
    });

  program
    .command('gateway')
    .description('run the HTTP gateway (REST API, webhooks, PIN page, codec server); prints "listening on URL"')
    .option('--port <n>', 'port to listen on, 0 = a free port (default: GATEWAY_PORT or 8080)', parsePort)
    .option('--host <host>', 'interface to listen on (default: GATEWAY_HOST or 127.0.0.1)')
    .action(async (opts: { port?: number; host?: string }) => {
      await servers().runGateway(opts);
    });

  program
    .command('simulator')
    .description('run the provider simulator (never the live provider); prints "listening on URL"')
    .option('--port <n>', 'port of the provider API, 0 = a free port', parsePort, 0)
    .option('--checkout-port <n>', 'port of the hosted checkout, 0 = a free port', parsePort, 0)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--expires-in <seconds>', 'swap confirmation window (expires_in_seconds) it hands out', parsePositive)
    .option('--seed <n>', 'seed of every random choice (faults, references)', parseCount)
    .option('--checkout-public-url <url>', 'base of pay_link when browsers reach the checkout by another address (default: SIMULATOR_CHECKOUT_PUBLIC_URL)', parseHttpUrl)
    .option('--notification-allow-hosts <hosts>', 'comma-separated non-loopback hosts it may send notifications to (default: SIMULATOR_NOTIFICATION_ALLOW_HOSTS)', parseHostList)
    .action(async (opts: SimulatorCommandOptions) => {
      await servers().runSimulator(opts);
    });

  // ---- swaps ----------------------------------------------------------------------------------

  const swap = program.command('swap').description('wallet currency swaps');
  swap
    .command('start')
    .description('start a swap: initialise it at the provider and print the rate, amounts, expiry and PIN URL')
    .requiredOption('--user-ref <ref>', "merchant's reference of the user")
    .requiredOption('--from <currency>', 'source currency, e.g. USD')
    .requiredOption('--to <currency>', 'destination currency, e.g. NGN')
    .requiredOption('--amount <amount>', 'amount in the source currency', parseAmount)
    .requiredOption('--txn-ref <ref>', 'unique transaction reference (the swap id is swap-<txn-ref>)')
    .option('--wait <seconds>', WAIT_HELP, parsePositive)
    .option('--json', JSON_HELP)
    .action(async (opts: SwapStartOptions) => {
      await swaps().swapStart(opts);
    });
  swap
    .command('pin')
    .description('submit the wallet PIN (typed at a hidden prompt, or piped on stdin; never an argument)')
    .argument('<swap_id>', 'the swap id, swap-<txn-ref>')
    .option('--wait <seconds>', WAIT_HELP, parsePositive)
    .option('--json', JSON_HELP)
    .action(async (swapId: string, opts: { json?: boolean; wait?: number }) => {
      await swaps().swapPin(swapId, opts);
    });
  swap
    .command('status')
    .description("show a swap's state")
    .argument('<swap_id>', 'the swap id, swap-<txn-ref>')
    .option('--json', JSON_HELP)
    .action(async (swapId: string, opts: { json?: boolean }) => {
      await swaps().swapStatus(swapId, opts);
    });
  swap
    .command('cancel')
    .description('cancel a swap still awaiting its PIN')
    .argument('<swap_id>', 'the swap id, swap-<txn-ref>')
    .option('--reason <text>', 'why (recorded on the swap)')
    .option('--json', JSON_HELP)
    .action(async (swapId: string, opts: { json?: boolean; reason?: string }) => {
      await swaps().swapCancel(swapId, opts);
    });

  // ---- payment links --------------------------------------------------------------------------

  const link = program.command('link').description('hosted bank-transfer payment links (NGN)');
  link
    .command('create')
    .description('create a payment link and print its pay_link')
    .requiredOption('--user-ref <ref>', "merchant's reference of the user")
    .requiredOption('--txn-merchant-ref <ref>', 'unique merchant transaction reference (the link id is paylink-<ref>)')
    .requiredOption('--amount <amount>', 'amount to collect, NGN', parseAmount)
    .requiredOption('--full-name <name>', "customer's full name")
    .requiredOption('--email <email>', "customer's e-mail address")
    .requiredOption('--phone <phone>', "customer's phone number")
    .requiredOption('--redirect-url <url>', 'where the customer is sent after paying')
    .option('--success-message <text>', 'message shown after a successful payment')
    .option('--wait <seconds>', WAIT_HELP, parsePositive)
    .option('--json', JSON_HELP)
    .action(async (opts: LinkCreateOptions) => {
      await links().linkCreate(opts);
    });
  link
    .command('status')
    .description("show a payment link's state and the notifications received")
    .argument('<link_id>', 'the link id, paylink-<txn-merchant-ref>')
    .option('--json', JSON_HELP)
    .action(async (linkId: string, opts: { json?: boolean }) => {
      await links().linkStatus(linkId, opts);
    });

  // ---- categories -----------------------------------------------------------------------------

  program
    .command('categories')
    .description("list the provider's product categories (through the worker)")
    .option('--tree', 'group sub-categories under their parents')
    .option('--wait <seconds>', WAIT_HELP, parsePositive)
    .option('--json', JSON_HELP)
    .action(async (opts: { tree?: boolean; json?: boolean; wait?: number }) => {
      await categories().listCategories(opts);
    });

  // ---- codec ----------------------------------------------------------------------------------

  program
    .command('codec-web-endpoint')
    .description("print the codec URL for Temporal Web (a capability URL derived from CODEC_AUTH_TOKEN; keep it operator-only)")
    .option('--base-url <url>', 'the gateway as Temporal Web reaches it (default GATEWAY_PUBLIC_URL)')
    .action((opts: { baseUrl?: string }) => {
      lazy<typeof CodecCommands>('./commands/codec').printCodecWebEndpoint(opts);
    });

  // ---- demo -----------------------------------------------------------------------------------

  program
    .command('demo')
    .description('embedded Temporal dev server + simulator + worker + gateway, both flows end to end')
    .option('--once', 'run the flows once and exit (0 only if both succeeded)')
    .action(async (opts: { once?: boolean }) => {
      const { runDemo } = lazy<typeof Demo>('./demo');
      process.exitCode = await runDemo({ once: Boolean(opts.once) });
    });

  return program;
}

export interface SimulatorCommandOptions {
  port: number;
  checkoutPort: number;
  host: string;
  expiresIn?: number;
  seed?: number;
  checkoutPublicUrl?: string;
  notificationAllowHosts?: string[];
}

export interface SwapStartOptions {
  userRef: string;
  from: string;
  to: string;
  amount: number;
  txnRef: string;
  wait?: number;
  json?: boolean;
}

export interface LinkCreateOptions {
  userRef: string;
  txnMerchantRef: string;
  amount: number;
  fullName: string;
  email: string;
  phone: string;
  redirectUrl: string;
  successMessage?: string;
  wait?: number;
  json?: boolean;
}

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

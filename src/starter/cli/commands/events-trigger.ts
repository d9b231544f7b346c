/**
 * `mpf events trigger <type>` (the `stripe trigger` of merchant events): drives a real flow through
 * the gateway (MPF_GATEWAY_URL with an API key) and the local simulator (its /_sim control API,
 * loopback only) to the point where it emits that event, and exits once the flow's view lists it.
 * `--list`, or no type, lists the types and what is done for each. The run itself
 * (events-trigger/) is loaded only when a type is given.
 */
import type { Command } from 'commander';
import { EVENT_TYPES } from '../../../contract/merchant-events';
import { JSON_HELP, parseHttpUrl, parsePositive } from '../options';
import { printJson, printLines } from '../output';
import { triggerList } from './events-trigger/catalog';
import type * as Run from './events-trigger/run';

interface TriggerCommandOptions {
  list?: boolean;
  timeout: number;
  simUrl?: string;
  json?: boolean;
}

/** How long a trigger waits for its event by default (`--timeout`). */
const DEFAULT_TIMEOUT_SECONDS = 60;

/** Adds `trigger` to `mpf events`. */
export function addTriggerCommand(events: Command): void {
  events
    .command('trigger')
    .description('drive a real flow through the gateway and the local simulator until it emits the event <type> (no type, or --list: the types)')
    .argument('[type]', 'the event type, e.g. swap.confirmed or payment_link.paid')
    .option('--list', 'list the event types and what the trigger does for each')
    .option('--timeout <seconds>', 'how long the whole run may take, the wait for the event included', parsePositive, DEFAULT_TIMEOUT_SECONDS)
    .option('--sim-url <url>', 'the simulator (default MPF_SIMULATOR_URL, else MPS_BASE_URL); loopback only, never the live provider', parseHttpUrl)
    .option('--json', `${JSON_HELP}: one object with the flow, the event id and the steps taken`)
    .action(async (type: string | undefined, opts: TriggerCommandOptions) => {
      if (opts.list || type === undefined) return list(opts.json);
      if (!EVENT_TYPES.includes(type)) throw new Error(`unknown event type "${type}": it is one of ${EVENT_TYPES.join(', ')}`);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { runTrigger } = require('./events-trigger/run') as typeof Run;
      await runTrigger(type, { timeout: opts.timeout, ...(opts.simUrl ? { simUrl: opts.simUrl } : {}), ...(opts.json ? { json: true } : {}) });
    });
}

function list(json: boolean | undefined): void {
  const types = triggerList();
  if (json) return printJson({ types });
  const width = Math.max(...types.map((t) => t.type.length));
  printLines([...types.map((t) => `${t.type.padEnd(width)}  ${t.how}`), '', 'mpf events trigger <type> [--timeout S] [--sim-url URL] [--json]']);
}

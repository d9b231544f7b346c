/**
 * `mpf events`: `listen|tail` (events-listen.ts: the `stripe listen` of merchant events), `secret`
 * (a new signing secret for MERCHANT_WEBHOOK_SECRET), the events API (events-api.ts) and `trigger`
 * (events-trigger.ts).
 */
import { Command } from 'commander';
import type * as Signing from '../../../merchant-events/signing';
import { JSON_HELP } from '../options';
import { addEventsApiCommands } from './events-api';
import { addListenCommand } from './events-listen';
import { addTriggerCommand } from './events-trigger';

export function eventsCommand(): Command {
  const events = new Command('events').description('merchant events: a local receiver that verifies and prints deliveries; signing secrets');
  addListenCommand(events);
  events
    .command('secret')
    .description('print a new random signing secret (whsec_…) for MERCHANT_WEBHOOK_SECRET')
    .option('--json', JSON_HELP)
    .action((opts: { json?: boolean }) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { generateSecret } = require('../../../merchant-events/signing') as typeof Signing;
      const secret = generateSecret();
      process.stdout.write(opts.json ? `${JSON.stringify({ secret })}\n` : `${secret}\n`);
    });
  addEventsApiCommands(events);
  addTriggerCommand(events);
  return events;
}

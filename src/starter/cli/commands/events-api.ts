/**
 * `mpf events list|show|redeliver`: the merchant events API from the terminal (the `stripe events`
 * of this project). Through the gateway with MPF_GATEWAY_URL and an API key (list and show with a
 * read_only key, redeliver with a backend or operator key), or Temporal directly for operators.
 */
import type { Command } from 'commander';
import type { EventPage } from '../../client/events';
import type * as Face from '../face';
import { DEFAULT_WAIT_SECONDS, JSON_HELP, parsePositive } from '../options';
import { printJson, printLines } from '../output';

interface EventListOptions {
  type?: string;
  flow?: string;
  from?: string;
  to?: string;
  limit?: number;
  pageToken?: string;
  json?: boolean;
}

// The client loads when the command runs, not when the program is built.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const face = (): typeof Face => require('../face') as typeof Face;

/** One line per event, then how to get the next page. */
export function eventLines(page: EventPage): string[] {
  if (page.items.length === 0) return ['no events'];
  const width = Math.max(...page.items.map((e) => e.id.length));
  const lines = page.items.map((e) => `${e.timestamp}  ${e.id.padEnd(width)}  ${e.type}`);
  if (page.next_page_token) lines.push(`more: mpf events list … --page-token ${page.next_page_token}`);
  return lines;
}

function showLines(e: Face.EventDetail): string[] {
  const attempt = (d: Face.EventDetail['deliveries'][number]): string =>
    `${d.endpoint}  ${d.state}  ${d.attempts} attempt(s)${d.last_status ? `  last ${d.last_status}` : ''}${d.last_error ? `  ${d.last_error}` : ''}${d.next_attempt_at ? `  next ${d.next_attempt_at}` : ''}`;
  return [
    `${e.id}  ${e.type}  ${e.timestamp}`,
    `flow: ${e.flow_id}`,
    `data: ${JSON.stringify(e.data)}`,
    ...(e.deliveries.length === 0 ? ['deliveries: none (no endpoint, or the delivery workflow did not answer)'] : ['deliveries:', ...e.deliveries.map((d) => `  ${attempt(d)}`)]),
    ...e.redeliveries.flatMap((r) => [`redelivery ${r.id}:`, ...r.deliveries.map((d) => `  ${attempt(d)}`)]),
  ];
}

/** Adds `list`, `show` and `redeliver` to `mpf events`. */
export function addEventsApiCommands(events: Command): void {
  events
    .command('list')
    .description('list merchant events, newest first across flows (filters: type, flow, time range; one page at a time)')
    .option('--type <type>', 'only events of this type (e.g. swap.confirmed)')
    .option('--flow <flow_id>', "only this flow's events")
    .option('--from <iso>', 'only events that happened at or after this ISO 8601 time')
    .option('--to <iso>', 'only events that happened before this ISO 8601 time')
    .option('--limit <n>', 'how many per page (1-100, default 20)', parsePositive)
    .option('--page-token <token>', 'the next page (printed at the end of the previous one)')
    .option('--json', JSON_HELP)
    .action(async (opts: EventListOptions) => {
      await face().withFace(DEFAULT_WAIT_SECONDS, async (f) => {
        const page = await f.listEvents({
          ...(opts.type !== undefined ? { type: opts.type } : {}),
          ...(opts.flow !== undefined ? { flow_id: opts.flow } : {}),
          ...(opts.from !== undefined ? { created_from: opts.from } : {}),
          ...(opts.to !== undefined ? { created_to: opts.to } : {}),
          ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
          ...(opts.pageToken !== undefined ? { page_token: opts.pageToken } : {}),
        });
        if (opts.json) return printJson(page);
        printLines(eventLines(page));
      });
    });
  events
    .command('show')
    .description('one event: its data, its delivery attempts per endpoint and its redeliveries')
    .argument('<event_id>', 'evt_<flow_id>_<n> (a delivery\'s webhook-id)')
    .option('--json', JSON_HELP)
    .action(async (eventId: string, opts: { json?: boolean }) => {
      await face().withFace(DEFAULT_WAIT_SECONDS, async (f) => {
        const e = await f.getEvent(eventId);
        if (opts.json) return printJson(e);
        printLines(showLines(e));
      });
    });
  events
    .command('redeliver')
    .alias('resend')
    .description('send an event again (same id, so your receiver de-duplicates it) to the endpoints its flow\'s events went to')
    .argument('<event_id>', 'evt_<flow_id>_<n>')
    .option('--endpoint <id>', 'only to this registered webhook endpoint (we_…; see mpf webhooks list)')
    .option('--json', JSON_HELP)
    .action(async (eventId: string, opts: { json?: boolean; endpoint?: string }) => {
      await face().withFace(DEFAULT_WAIT_SECONDS, async (f) => {
        const r = await f.redeliverEvent(eventId, opts.endpoint);
        if (opts.json) return printJson(r);
        printLines([`redelivering ${r.event_id} as ${r.id} to ${r.deliveries.map((d) => d.endpoint).join(', ')}`, `follow it: mpf events show ${r.event_id}`]);
      });
    });
}

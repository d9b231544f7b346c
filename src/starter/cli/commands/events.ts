/**
 * `mpf events listen|tail` (the `stripe listen` of merchant events): a local receiver that checks
 * each delivery's Standard Webhooks signature and prints it as it arrives; `mpf events secret`
 * prints a new signing secret for MERCHANT_WEBHOOK_SECRET.
 */
import { Command, InvalidArgumentError } from 'commander';
import { ConfigError, loadEnv } from '../../../config/env';
import type * as Listener from '../../../merchant-events/listener';
import type * as Signing from '../../../merchant-events/signing';
import { JSON_HELP, parseCount, parsePort, readOptionFile } from '../options';
import { addEventsApiCommands } from './events-api';
import { addTriggerCommand } from './events-trigger';

interface ListenOptions {
  port: number;
  host: string;
  secret?: string;
  secretFile?: string;
  fail: number;
  json?: boolean;
}

function parseHttpStatusCount(value: string): number {
  const n = parseCount(value);
  if (n > 100) throw new InvalidArgumentError('must be at most 100');
  return n;
}

export function eventsCommand(): Command {
  const events = new Command('events').description('merchant events: a local receiver that verifies and prints deliveries; signing secrets');
  events
    .command('listen')
    .alias('tail')
    .description('receive merchant events on a local port, verify each signature and print each delivery as it arrives (Ctrl-C stops)')
    .option('--port <n>', 'port to listen on, 0 = a free port', parsePort, 8787)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--secret <whsec>', 'the signing secret (default MERCHANT_WEBHOOK_SECRET or MERCHANT_WEBHOOK_SECRET_FILE; an argument is visible to other users of this machine)')
    .option('--secret-file <path>', 'read the signing secret from a file')
    .option('--fail <n>', 'answer 503 to the first n attempts of each event (to watch the retries)', parseHttpStatusCount, 0)
    .option('--json', 'print each delivery as one JSON line (the event included)')
    .action(listen);
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

function secretsOf(opts: ListenOptions, signing: typeof Signing): string[] {
  let value = opts.secret;
  if (value === undefined && opts.secretFile !== undefined) value = readOptionFile('--secret-file', opts.secretFile);
  value ??= loadEnv().MERCHANT_WEBHOOK_SECRET;
  const secrets = signing.splitSecrets(value);
  if (secrets.length === 0) {
    throw new ConfigError('MERCHANT_WEBHOOK_SECRET: is not set: give the secret the worker signs with (MERCHANT_WEBHOOK_SECRET, --secret-file or --secret); `mpf events secret` makes one');
  }
  for (const s of secrets) {
    const problem = signing.secretProblem(s);
    if (problem) throw new ConfigError(`the signing secret ${problem}`);
  }
  return secrets;
}

async function listen(opts: ListenOptions): Promise<void> {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const signing = require('../../../merchant-events/signing') as typeof Signing;
  const { startEventListener } = require('../../../merchant-events/listener') as typeof Listener;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const secrets = secretsOf(opts, signing);
  const listener = await startEventListener({
    secrets,
    host: opts.host,
    port: opts.port,
    answer: (d) => (d.attempt <= opts.fail ? 503 : 200),
    onDelivery: (d) => {
      if (opts.json) {
        const { body: _body, headers: _headers, ...rest } = d;
        process.stdout.write(`${JSON.stringify(rest)}\n`);
        return;
      }
      const answer = d.aborted ? 'connection closed before the answer' : `answered ${d.status}`;
      const what = d.verified ? `${d.event?.type ?? '?'}  ${d.id}  ${flowOf(d.event?.data)}` : `INVALID SIGNATURE (${d.error})  ${d.id}`;
      process.stdout.write(`${d.received_at}  ${what}  attempt ${d.attempt}  ${answer}\n`);
    },
  });
  process.stdout.write(`listening on ${listener.url} (set MERCHANT_WEBHOOK_URL=${listener.url} on the worker, or webhook_url per flow); Ctrl-C stops\n`);
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await listener.close();
}

function flowOf(data: Record<string, unknown> | undefined): string {
  if (!data) return '';
  const id = data.swap_id ?? data.link_id;
  return `${String(id ?? '')} -> ${String(data.state ?? '')}`;
}

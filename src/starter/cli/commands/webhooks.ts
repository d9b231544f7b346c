/**
 * `mpf webhooks list|create|get|update|disable|enable|delete|roll-secret`: the deployment's webhook
 * endpoints (client/webhook-endpoints.ts). Through the gateway (MPF_GATEWAY_URL, and a person's
 * access token in MPF_ACCESS_TOKEN or an operator key in MPF_API_KEY: the routes are operators'),
 * or Temporal directly for an operator holding the Temporal credentials and payload keys. The
 * secret is printed by `create` and `roll-secret` only, once: keep it where the receiver reads it.
 */
import { Command } from 'commander';
import type { WebhookEndpointView } from '../../../contract/webhook-endpoints';
import type { MpfGateway } from '../../../http-client';
import type { MpfClient } from '../../client/mpf-client';
import { operatorCall } from '../face';
import { JSON_HELP, parseCount } from '../options';
import { printJson, printLines } from '../output';

type Shown = WebhookEndpointView & { secret?: string; deleted?: boolean };

/** The operations, answered the same way by the gateway and by Temporal directly. */
interface Endpoints {
  list(): Promise<Shown[]>;
  create(body: { url: string; enabled_events: string[]; description?: string }): Promise<Shown>;
  get(id: string): Promise<Shown>;
  update(id: string, body: { url?: string; enabled_events?: string[]; description?: string }): Promise<Shown>;
  setEnabled(id: string, enabled: boolean): Promise<Shown>;
  remove(id: string): Promise<Shown>;
  roll(id: string, expiresInSeconds: number | undefined): Promise<Shown>;
}

/** One endpoint, one line (and its secret on a line of its own, when the answer holds it). */
export function endpointLines(e: Shown): string[] {
  const lines = [
    `${e.id}  ${e.deleted ? 'deleted' : e.status.padEnd(8)}  ${e.url}  events: ${e.enabled_events.join(',')}${e.description ? `  (${e.description})` : ''}${e.previous_secret_expires_at ? `  previous secret signs until ${e.previous_secret_expires_at}` : ''}`,
  ];
  if (e.secret) lines.push(`secret: ${e.secret}`, 'shown once: keep it where your receiver verifies events (roll it if it is lost)');
  return lines;
}

function viaClient(mpf: MpfClient): Endpoints {
  const w = mpf.webhookEndpoints;
  return {
    list: () => w.list(),
    create: (body) => w.create(body),
    get: (id) => w.get(id),
    update: (id, body) => w.update(id, body),
    setEnabled: (id, enabled) => w.setStatus(id, enabled ? 'enabled' : 'disabled'),
    remove: (id) => w.remove(id),
    roll: (id, s) => w.rollSecret(id, s === undefined ? {} : { expires_in_seconds: s }),
  };
}

function viaGateway(gw: MpfGateway): Endpoints {
  return {
    list: () => gw.listWebhookEndpoints() as Promise<Shown[]>,
    create: (body) => gw.createWebhookEndpoint(body) as Promise<Shown>,
    get: (id) => gw.getWebhookEndpoint(id) as Promise<Shown>,
    update: (id, body) => gw.updateWebhookEndpoint(id, body) as Promise<Shown>,
    setEnabled: (id, enabled) => gw.setWebhookEndpointEnabled(id, enabled) as Promise<Shown>,
    remove: (id) => gw.deleteWebhookEndpoint(id) as Promise<Shown>,
    roll: (id, s) => gw.rollWebhookEndpointSecret(id, s === undefined ? {} : { expires_in_seconds: s }) as Promise<Shown>,
  };
}

async function run<T extends Shown | Shown[]>(what: string, op: (e: Endpoints) => Promise<T>, json: boolean | undefined): Promise<void> {
  const answer = await operatorCall(`mpf webhooks ${what}`, (gw) => op(viaGateway(gw)), (c) => op(viaClient(c.mpf)));
  if (json) return printJson(Array.isArray(answer) ? { items: answer } : answer);
  if (Array.isArray(answer)) return printLines(answer.length ? answer.flatMap(endpointLines) : ['no webhook endpoints (events go to the configured MERCHANT_WEBHOOK_URL only)']);
  printLines(endpointLines(answer));
}

const eventsList = (v: string): string[] => v.split(',').map((s) => s.trim()).filter(Boolean);

export function webhooksCommand(): Command {
  const hooks = new Command('webhooks').description("the deployment's webhook endpoints: where the signed merchant events go, which types, each with its own secret (operators)");
  hooks
    .command('list')
    .description('every endpoint (no secrets)')
    .option('--json', JSON_HELP)
    .action((o: { json?: boolean }) => run('list', (e) => e.list(), o.json));
  hooks
    .command('create')
    .description('a new endpoint; prints its secret, once')
    .requiredOption('--url <url>', 'where the events are POSTed (the deployment must allow its host: MERCHANT_WEBHOOK_ALLOWED_HOSTS)')
    .requiredOption('--events <types>', "comma-separated event types (swap.confirmed,payment_link.paid), or '*' for all")
    .option('--description <text>', 'what it is for')
    .option('--json', JSON_HELP)
    .action((o: { url: string; events: string; description?: string; json?: boolean }) =>
      run('create', (e) => e.create({ url: o.url, enabled_events: eventsList(o.events), ...(o.description !== undefined ? { description: o.description } : {}) }), o.json),
    );
  hooks
    .command('get')
    .description('one endpoint (no secret)')
    .argument('<id>', 'we_…')
    .option('--json', JSON_HELP)
    .action((id: string, o: { json?: boolean }) => run('get', (e) => e.get(id), o.json));
  hooks
    .command('update')
    .description('change its url, event types or description (the next event sent follows the change)')
    .argument('<id>', 'we_…')
    .option('--url <url>', 'a new URL')
    .option('--events <types>', "comma-separated event types, or '*'")
    .option('--description <text>', "a new description ('' removes it)")
    .option('--json', JSON_HELP)
    .action((id: string, o: { url?: string; events?: string; description?: string; json?: boolean }) =>
      run(
        'update',
        (e) =>
          e.update(id, {
            ...(o.url !== undefined ? { url: o.url } : {}),
            ...(o.events !== undefined ? { enabled_events: eventsList(o.events) } : {}),
            ...(o.description !== undefined ? { description: o.description } : {}),
          }),
        o.json,
      ),
    );
  for (const [name, enabled, help] of [
    ['disable', false, 'send it nothing from the next event on'],
    ['enable', true, 'send it the events from now on'],
  ] as const) {
    hooks
      .command(name)
      .description(help)
      .argument('<id>', 'we_…')
      .option('--json', JSON_HELP)
      .action((id: string, o: { json?: boolean }) => run(name, (e) => e.setEnabled(id, enabled), o.json));
  }
  hooks
    .command('delete')
    .description('remove it: it is sent nothing more')
    .argument('<id>', 'we_…')
    .option('--json', JSON_HELP)
    .action((id: string, o: { json?: boolean }) => run('delete', (e) => e.remove(id), o.json));
  hooks
    .command('roll-secret')
    .description('a new secret, printed once; the previous one keeps signing beside it for the overlap')
    .argument('<id>', 'we_…')
    .option('--expires-in <seconds>', 'how long the previous secret keeps signing (default 86400; 0: it stops at once)', parseCount)
    .option('--json', JSON_HELP)
    .action((id: string, o: { expiresIn?: number; json?: boolean }) => run('roll-secret', (e) => e.roll(id, o.expiresIn), o.json));
  return hooks;
}

/**
 * `mpf reconcile list|resolve`: the flows in needs_reconciliation, and an operator's resolution
 * (the workflows' `resolve` update) with the audit record it leaves in the flow's view.
 *
 * `resolve` goes through the gateway when one is named (`--gateway URL` or MPF_GATEWAY_URL) with
 * the operator's credential (never its value as an option, since a command line is visible to
 * every user of the machine): `mpf --api-key-file <path>`, else the one credential of the
 * environment — a person's access token (MPF_ACCESS_TOKEN or MPF_ACCESS_TOKEN_FILE, from `mpf
 * cluster login` or the organisation's IdP; sent as `Authorization: Bearer`) or the operator's API
 * key (MPF_API_KEY or MPF_API_KEY_FILE); both is refused unless `mpf --as person|key` picks
 * (credentials.ts). The audit record then names that person (`person <name> (sub <subject>)`) or
 * that key, and a credential without the operator's role is told so, naming where it came from.
 * Without a gateway it sends the update straight to
 * Temporal, as anyone holding the Temporal credentials (in `mpf cluster up`, the operator's client
 * certificate) can: the record then names `--operator` and says it came through Temporal.
 */
import { Command } from 'commander';
import { cliSetting } from '../../../config/cli-env';
import { NotResolvableError } from '../../client/errors';
import type { LinkView, SwapView } from '../../../workflows/messages';
import type * as Connect from '../connect';
import type * as Face from '../face';
import { credentialGiven } from '../credentials';
import { gatewayClientFor, requireOperatorCredential, type GatewayCredential } from '../face';
import type * as HttpClient from '../../../http-client';
import type { ResolveRequest } from '../../../http-client';
import { DEFAULT_WAIT_SECONDS, JSON_HELP, parsePositive } from '../options';
import { printJson, printLines, rows } from '../output';
import { pageLines } from './lists';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const connect = (): typeof Connect => require('../connect') as typeof Connect;

interface ReconcileListOptions {
  kind?: string;
  limit?: number;
  pageToken?: string;
  json?: boolean;
}

interface ResolveOptions {
  outcome: string;
  providerReference: string;
  operator?: string;
  note: string;
  gateway?: string;
  json?: boolean;
}

class NotResolvable extends Error {
  override name = 'NotResolvableError';
}

export function reconcileCommand(): Command {
  const reconcile = new Command('reconcile').description('flows where money may have moved and nothing settled it (needs_reconciliation)');
  reconcile
    .command('list')
    .description('list swaps and payment links waiting in needs_reconciliation, newest first')
    .option('--kind <kind>', 'swap or payment_link (default both)')
    .option('--limit <n>', 'how many per page (1-100, default 20)', parsePositive)
    .option('--page-token <token>', 'the next page (printed at the end of the previous one)')
    .option('--json', JSON_HELP)
    .action(async (opts: ReconcileListOptions) => {
      if (opts.kind !== undefined && opts.kind !== 'swap' && opts.kind !== 'payment_link') throw new Error('--kind: must be swap or payment_link');
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      await (require('../face') as typeof Face).withFace(DEFAULT_WAIT_SECONDS, async (f) => {
        const page = await f.listReconciliations(opts.kind as 'swap' | 'payment_link' | undefined, {
          ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
          ...(opts.pageToken !== undefined ? { page_token: opts.pageToken } : {}),
        });
        if (opts.json) return printJson(page);
        printLines(pageLines(page, 'nothing waits for reconciliation', (t) => `more: mpf reconcile list --page-token ${t}`));
      });
    });
  reconcile
    .command('resolve')
    .description('record what the provider shows for a flow in needs_reconciliation and end it reconciled')
    .argument('<flow_id>', 'swap-<txn_ref> or paylink-<txn_merchant_ref>')
    .requiredOption('--outcome <outcome>', 'confirmed | failed (swap), paid | failed (payment link): what the provider shows')
    .requiredOption('--provider-reference <ref>', "the provider's reference you checked (payment_ref, statement line)")
    .option('--operator <name>', "who decides, in words (required without a gateway; through one the audit record names the person's access token or the API key)")
    .requiredOption('--note <text>', 'what was checked and done (no tokens or secrets)')
    .option('--gateway <url>', "resolve through this gateway as the person signed in (MPF_ACCESS_TOKEN) or with the operator's API key (MPF_API_KEY) (default: MPF_GATEWAY_URL)")
    .option('--json', JSON_HELP)
    .action(async (flowId: string, opts: ResolveOptions) => {
      const gateway = opts.gateway ?? cliSetting('MPF_GATEWAY_URL');
      const body = { outcome: opts.outcome, provider_reference: opts.providerReference, note: opts.note, ...(opts.operator ? { operator: opts.operator } : {}) };
      if (gateway) return printResolved(flowId, await resolveThroughGateway(gateway, flowId, body), opts.json);
      if (!opts.operator) throw new Error("--operator: is required without a gateway (who decides); or resolve through the gateway with --gateway, as a person (MPF_ACCESS_TOKEN) or with an operator key in MPF_API_KEY");
      const operator = opts.operator;
      const { withClient, answerWithin } = connect();
      await withClient(async (c) => {
        let view: SwapView | LinkView;
        try {
          view = await answerWithin(
            c.mpf.resolveFlow(flowId, { ...body, operator: `${operator} (through Temporal, not an API key)` }),
            DEFAULT_WAIT_SECONDS,
            c,
          );
        } catch (err) {
          if (err instanceof NotResolvableError) throw new NotResolvable(err.message);
          throw err;
        }
        printResolved(flowId, view, opts.json);
      });
    });
  return reconcile;
}

function printResolved(flowId: string, view: SwapView | LinkView, json: boolean | undefined): void {
  if (json) return printJson(view);
  const r = view.reconciliation;
  printLines([
    `${flowId}: ${view.state}`,
    ...rows([
      ['outcome', r?.outcome],
      ['provider_reference', r?.provider_reference],
      ['operator', r?.operator],
      ['resolved_at', r?.resolved_at],
      ['note', r?.note],
      ['was', r?.reason_before],
    ]),
  ]);
}

/** The operator's credential for the gateway, by the one rule of credentials.ts (two in the environment: refused, exit 2). */
function operatorCredential(): GatewayCredential {
  if (!credentialGiven()) {
    // Worded as before for the API key, naming the person's token beside it.
    throw new Error(`MPF_API_KEY: is required to resolve through the gateway (an API key of role operator: mpf keys new --role operator), or a person's access token in MPF_ACCESS_TOKEN (mpf cluster login)`);
  }
  return requireOperatorCredential('mpf reconcile resolve');
}

/**
 * POST /v1/admin/flows/{flow_id}/resolve through the light client (its retries, one
 * Idempotency-Key) with the operator's credential; a clear error for 401/403/409/400.
 */
async function resolveThroughGateway(gateway: string, flowId: string, body: Record<string, string>): Promise<SwapView | LinkView> {
  let base: URL;
  try {
    base = new URL(gateway);
  } catch {
    throw new Error("--gateway: must be the gateway's base URL, e.g. http://127.0.0.1:8080");
  }
  const credential = operatorCredential();
  const gw = gatewayClientFor(gateway, credential, DEFAULT_WAIT_SECONDS * 1000 + 5_000);
  try {
    // The gateway validates the body (a wrong outcome is its 400 naming the field).
    return (await gw.resolveFlow(flowId, body as unknown as ResolveRequest)) as unknown as SwapView | LinkView;
  } catch (err) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const http = require('../../../http-client') as typeof HttpClient;
    if (err instanceof http.MpfApiError) throw refusalOf(err, credential);
    if (err instanceof http.MpfConnectionError) throw new Error(`the gateway at ${base.origin} did not answer (${err.name})`, { cause: err });
    throw err;
  }
}

/** The gateway's refusal of a resolve as one line naming the role, the credential's source or the field. */
function refusalOf(err: HttpClient.MpfApiError, credential: GatewayCredential): Error {
  // A code of the gateway's error body; `http_<status>` means the body had none.
  const code = err.code.startsWith('http_') ? undefined : err.code;
  const said = err.message;
  if (err.status === 403 && code === 'forbidden') {
    if (credential.person) return new Error(`the gateway answered 403 forbidden: mpf reconcile resolve needs the operator's role; the person in ${credential.from} lacks it (${said})`);
    return new Error(`the gateway answered 403 forbidden: mpf reconcile resolve needs an API key of role operator; the key sent came from ${credential.from} (${said})`);
  }
  if (err.status === 401) return new Error(`the gateway refused ${credential.from} (${code ?? 'unauthorized'}): ${said}${credential.person ? ' (mpf cluster login, then source cluster.env again)' : ''}`);
  if (err.status === 409 && code === 'not_resolvable') return new NotResolvable(said);
  if (err.status === 400) return new Error(`invalid --${(err.field ?? 'input').replace(/_/g, '-')} (${said})`);
  return new Error(`the gateway answered ${err.status} ${code ?? ''}: ${said}`);
}

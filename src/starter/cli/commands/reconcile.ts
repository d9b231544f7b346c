/**
 * `mpf reconcile list|resolve`: the flows in needs_reconciliation, and an operator's resolution
 * (the workflows' `resolve` update) with the audit record it leaves in the flow's view.
 */
import { Command } from 'commander';
import { NotResolvableError } from '../../client/errors';
import type { LinkView, SwapView } from '../../../workflows/messages';
import type * as Connect from '../connect';
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
  operator: string;
  note: string;
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
      await connect().withClient(async ({ mpf }) => {
        const page = await mpf.listFlows((opts.kind as 'swap' | 'payment_link' | undefined) ?? 'any', {
          state: 'needs_reconciliation',
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
    .requiredOption('--operator <name>', 'who decides')
    .requiredOption('--note <text>', 'what was checked and done (no tokens or secrets)')
    .option('--json', JSON_HELP)
    .action(async (flowId: string, opts: ResolveOptions) => {
      const { withClient, answerWithin } = connect();
      await withClient(async (c) => {
        let view: SwapView | LinkView;
        try {
          view = await answerWithin(
            c.mpf.resolveFlow(flowId, { outcome: opts.outcome, provider_reference: opts.providerReference, operator: opts.operator, note: opts.note }),
            DEFAULT_WAIT_SECONDS,
            c,
          );
        } catch (err) {
          if (err instanceof NotResolvableError) throw new NotResolvable(err.message);
          throw err;
        }
        if (opts.json) return printJson(view);
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
      });
    });
  return reconcile;
}

/** `mpf swap list` and `mpf link list`: one page of flows by state, start time, reference and customer (Temporal visibility). */
import type { Command } from 'commander';
import type { FlowPage } from '../../client/lists';
import type * as Face from '../face';
import { DEFAULT_WAIT_SECONDS } from '../options';
import { JSON_HELP, parsePositive } from '../options';
import { printJson, printLines } from '../output';

interface ListOptions {
  state?: string;
  from?: string;
  to?: string;
  txnRef?: string;
  userRef?: string;
  limit?: number;
  pageToken?: string;
  json?: boolean;
}

// The client loads when the command runs, not when the program is built.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const face = (): typeof Face => require('../face') as typeof Face;

/** The list's lines: one row per flow, then how to get the next page. */
export function pageLines(page: FlowPage, empty: string, nextHint: (token: string) => string): string[] {
  if (page.items.length === 0) return [empty];
  const width = Math.max(...page.items.map((i) => i.flow_id.length));
  const lines = page.items.map(
    (i) => `${i.flow_id.padEnd(width)}  ${(i.state ?? '?').padEnd(20)}  created ${i.created_at ?? '?'}${i.execution_status === 'RUNNING' ? '' : `  (${i.execution_status.toLowerCase()})`}`,
  );
  if (page.next_page_token) lines.push(nextHint(page.next_page_token));
  return lines;
}

/** Adds `list` to `parent` (swap or link). */
export function addListCommand(parent: Command, kind: 'swap' | 'payment_link'): void {
  const noun = kind === 'swap' ? 'swaps' : 'payment links';
  const cmd = kind === 'swap' ? 'swap' : 'link';
  parent
    .command('list')
    .description(`list ${noun}, newest first (Temporal visibility: a state change may show a moment late)`)
    .option('--state <state>', `only ${noun} in this state (e.g. needs_reconciliation)`)
    .option('--from <iso>', 'only those started at or after this ISO 8601 time')
    .option('--to <iso>', 'only those started before this ISO 8601 time')
    .option('--txn-ref <ref>', `only the one of this reference (${kind === 'swap' ? 'txn_ref' : 'txn_merchant_ref'})`)
    .option('--user-ref <ref>', "only the customer's (user_ref; flows started before this release never match)")
    .option('--limit <n>', 'how many per page (1-100, default 20)', parsePositive)
    .option('--page-token <token>', 'the next page (printed at the end of the previous one)')
    .option('--json', JSON_HELP)
    .action(async (opts: ListOptions) => {
      await face().withFace(DEFAULT_WAIT_SECONDS, async (f) => {
        const page = await f.listFlows(kind, {
          ...(opts.state !== undefined ? { state: opts.state } : {}),
          ...(opts.from !== undefined ? { created_from: opts.from } : {}),
          ...(opts.to !== undefined ? { created_to: opts.to } : {}),
          ...(opts.txnRef !== undefined ? { txn_ref: opts.txnRef } : {}),
          ...(opts.userRef !== undefined ? { user_ref: opts.userRef } : {}),
          ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
          ...(opts.pageToken !== undefined ? { page_token: opts.pageToken } : {}),
        });
        if (opts.json) return printJson(page);
        printLines(pageLines(page, `no ${noun}`, (t) => `more: mpf ${cmd} list … --page-token ${t}`));
      });
    });
}

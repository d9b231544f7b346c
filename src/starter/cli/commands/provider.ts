/**
 * `mpf provider pause|resume|status`: the deployment's kill switch and circuit breakers
 * (contract/provider-guard.ts). Through the gateway (MPF_GATEWAY_URL, and a person's access token in
 * MPF_ACCESS_TOKEN or an operator key in MPF_API_KEY: the action recorded under the person or the
 * key's id), or Temporal directly for an operator holding the Temporal
 * credentials (recorded as `--operator`, through Temporal). A pause stops every money-moving call
 * deployment-wide without stopping the workers, and survives restarts.
 */
import os from 'node:os';
import { Command } from 'commander';
import type { GuardView } from '../../../contract/provider-guard';
import { operatorCall } from '../face';
import { JSON_HELP } from '../options';
import { printJson, printLines } from '../output';

interface ProviderOptions {
  json?: boolean;
  operator?: string;
}

/** What the guard says, one line per item. */
export function guardLines(view: GuardView): string[] {
  const lines = [view.paused ? `PAUSED by ${view.paused.by} at ${view.paused.at}: ${view.paused.reason}` : 'not paused: money-moving calls are allowed'];
  for (const [cls, b] of Object.entries(view.breakers)) {
    const trial = b.trial ? (b.trial.key ? `; trial call: ${b.trial.key} since ${b.trial.claimed_at}` : '; GET ok, trial call not claimed yet') : '';
    lines.push(`breaker ${cls.padEnd(8)} ${b.state}${b.state === 'closed' ? '' : ` since ${b.since}${b.reason ? ` (${b.reason})` : ''}${b.probe_at ? `, probe at ${b.probe_at}` : ''}${trial}`}`);
  }
  const s = view.settings;
  lines.push(
    `thresholds: ${s.ambiguous_count} ambiguous, or ${Math.round(s.ambiguous_share * 100)}% of ${s.min_calls}+ calls, or ${s.throttled_count} × 429, in ${s.window_ms / 1000} s; cool-down ${s.cooldown_ms / 1000} s${s.slow_ms ? `; unanswered ${s.slow_ms / 1000} s counts as ambiguous` : ''}`,
  );
  for (const a of view.audit.slice(-5)) lines.push(`${a.at}  ${a.action} by ${a.by}${a.reason ? `: ${a.reason}` : ''}`);
  return lines;
}

type Action = { kind: 'status' } | { kind: 'pause'; reason: string } | { kind: 'resume' };

async function run(action: Action, opts: ProviderOptions): Promise<void> {
  const by = `${opts.operator ?? `${os.userInfo().username}@${os.hostname()}`} (through Temporal)`;
  const view = (await operatorCall(
    `mpf provider ${action.kind}`,
    async (gw) => (action.kind === 'status' ? await gw.providerStatus() : action.kind === 'pause' ? await gw.pauseProvider(action.reason) : await gw.resumeProvider()) as GuardView,
    (c) => (action.kind === 'status' ? c.mpf.providerStatus() : action.kind === 'pause' ? c.mpf.pauseProvider(by, action.reason) : c.mpf.resumeProvider(by)),
  )) as GuardView | undefined;
  if (opts.json) return printJson(view ?? { paused: undefined, breakers: undefined, note: 'no guard yet: nothing paused, every breaker closed' });
  printLines(view ? guardLines(view) : ['no guard yet (no worker has run): nothing paused, every breaker closed']);
}

export function providerCommand(): Command {
  const provider = new Command('provider').description("the provider guard: pause and resume money-moving calls deployment-wide; the breakers' state");
  const operatorOption = '--operator <name>';
  const operatorHelp = 'who acts, when going to Temporal directly (through a gateway the person signed in, or the API key, is recorded)';
  provider
    .command('status')
    .description('whether money-moving calls are paused, and each breaker (initiate, confirm, create)')
    .option('--json', JSON_HELP)
    .action((opts: ProviderOptions) => run({ kind: 'status' }, opts));
  provider
    .command('pause')
    .description('stop every money-moving call to the provider now (workers keep running: reads, timers, notifications go on)')
    .requiredOption('--reason <text>', 'why (recorded, and shown to callers refused meanwhile)')
    .option(operatorOption, operatorHelp)
    .option('--json', JSON_HELP)
    .action((opts: ProviderOptions & { reason: string }) => run({ kind: 'pause', reason: opts.reason }, opts));
  provider
    .command('resume')
    .description('let money-moving calls go again (an open breaker stays open until its probe succeeds)')
    .option(operatorOption, operatorHelp)
    .option('--json', JSON_HELP)
    .action((opts: ProviderOptions) => run({ kind: 'resume' }, opts));
  return provider;
}

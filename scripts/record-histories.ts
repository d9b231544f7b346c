/**
 * `npm run record-histories [-- --release LABEL]`: records the replay corpus of this release for
 * test/unit/replay.test.ts. Runs every path a flow can take on a real dev server with the
 * simulator and writes each encrypted history to test/replay/<release>/<path>.json, with
 * release.json naming the release (package version and commit). `npm test` replays every release
 * kept, so a change that would break the flows a release left parked fails before it ships.
 * Record at each release; keep a release's directory while any flow it started may be open.
 * The key in test/replay/test-key.txt is a test-only key that protects nothing.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { startEventListener } from '../src/merchant-events/listener';
import { generateSecret } from '../src/merchant-events/signing';
import { NO_MERCHANT_EVENTS } from '../src/merchant-events/config';
import { DEFAULT_BREAKER, type GuardView, type OutcomeReport, PROVIDER_GUARD_WORKFLOW_TYPE } from '../src/contract/provider-guard';
import { guardClaimTrialUpdate, guardOutcomesSignal, guardPauseUpdate, guardQuery, guardReleaseTrialUpdate, guardResumeUpdate } from '../src/workflows/provider-guard';
import { startStack } from '../test/helpers/stack';

/** The paths a release's corpus must cover (test/unit/replay.test.ts checks the newest release has each). */
export const CORPUS_PATHS = [
  'swap-confirmed',
  'swap-wrong-pin-then-confirmed',
  'swap-three-wrong-pins',
  'swap-expired',
  'swap-cancelled',
  'swap-cancelled-in-temporal',
  'swap-needs-reconciliation-then-reconciled',
  'swap-in-doubt-settled-by-notification',
  'paylink-paid',
  'paylink-paid-with-duplicates-and-out-of-order',
  'paylink-failed',
  'paylink-expired',
  'paylink-cancelled',
  'paylink-paid-late',
  'paylink-needs-reconciliation-then-reconciled',
  'swap-terminated-carried-on',
  'paylink-terminated-carried-on-then-reconciled',
  'events-delivered-after-retries',
  'idempotency-record',
  'pin-budget',
  'provider-guard',
  'provider-guard-continued-as-new',
] as const;

const ROOT = path.resolve(__dirname, '..');
const REPLAY = path.join(ROOT, 'test', 'replay');

function releaseLabel(): { label: string; version: string; commit: string } {
  const version = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  return { label: `${version}-${commit}`, version, commit };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { release: { type: 'string' } } });
  const rel = releaseLabel();
  const label = values.release ?? rel.label;
  const dir = path.join(REPLAY, label);
  fs.mkdirSync(dir, { recursive: true });
  const keys = fs.readFileSync(path.join(REPLAY, 'test-key.txt'), 'utf8').trim();

  // A receiver that refuses the first two deliveries of every event: deliveries after retries.
  const secret = generateSecret();
  const seen = new Map<string, number>();
  const receiver = await startEventListener({ secrets: [secret], answer: (d) => ((seen.set(d.id, (seen.get(d.id) ?? 0) + 1), seen.get(d.id)! <= 2) ? 503 : 200) });
  const stack = await startStack({
    keys,
    simulator: { pins: { 'user-r': '2468' }, swapExpiresInSeconds: 3 },
    client: { linkLifetimeSeconds: 3, linkLateNotificationGraceSeconds: 3, swapSettleWaitSeconds: 1, swapNotificationWaitSeconds: 2 },
    events: { ...NO_MERCHANT_EVENTS, urls: [], secrets: [secret], schedule: { ...NO_MERCHANT_EVENTS.schedule, initial_interval_ms: 200, max_interval_ms: 400 } },
    closedFlowSweepMs: 500,
  });
  const r = recorder(stack, dir, receiver.url);
  try {
    await recordSwaps(r);
    await recordLinks(r);
    await recordClosedFromOutside(r);
    await recordKeyedRecords(r);
    await recordProviderGuard(r);
  } finally {
    await stack.stop();
    await receiver.close();
  }
  const missing = CORPUS_PATHS.filter((p) => !r.recorded.includes(p));
  fs.writeFileSync(
    path.join(dir, 'release.json'),
    `${JSON.stringify({ release: label, version: rel.version, commit: rel.commit, recorded_at: new Date().toISOString(), paths: r.recorded, workflow_ids: r.ids, not_recorded: missing }, null, 2)}\n`,
  );
  console.log(`release ${label}: ${r.recorded.length} histories in ${path.relative(ROOT, dir)}${missing.length ? `; not recorded: ${missing.join(', ')}` : ''}`);
}

type Recorder = ReturnType<typeof recorder>;

/** What the recordings share: the stack, request bodies, notifications, waits, and `save`, which writes a flow's history once it closed. */
function recorder(stack: Awaited<ReturnType<typeof startStack>>, dir: string, webhookUrl: string) {
  const stamp = Date.now().toString(36);
  const recorded: string[] = [];
  const ids: Record<string, string> = {};
  const save = async (name: string, id: string, runId?: string) => {
    const h = stack.client.workflow.getHandle(id, runId);
    await h.result().catch(() => undefined);
    fs.writeFileSync(path.join(dir, `${name}.json`), historyToJSON(await h.fetchHistory()) + '\n');
    recorded.push(name);
    ids[name] = id;
    console.log(`recorded ${name} (${id})`);
  };
  const swap = (txn: string, extra: Record<string, unknown> = {}) => ({ user_ref: 'user-r', from_currency: 'USD', to_currency: 'NGN', amount: 12.5, txn_ref: `${txn}-${stamp}`, ...extra });
  const link = (txn: string, extra: Record<string, unknown> = {}) => ({
    user_ref: 'cust-r', txn_merchant_ref: `${txn}-${stamp}`, amount: 3000, full_name: 'Ada Obi', email: 'ada@example.com',
    phone: '+2348012345678', redirect_url: 'http://127.0.0.1:9/thanks', ...extra,
  });
  const notify = async (linkId: string, paymentRef: string, id: string, status: string, extra: Record<string, unknown> = {}) => {
    const n = { event: `collection.${status}`, data: { payment_ref: paymentRef, status, notification_id: id, ...extra } };
    await stack.mpf.deliverNotification(linkId, n, JSON.stringify(n));
  };
  /** Waits (bounded) until the flow's view is in `state`. */
  const untilState = async (view: () => Promise<{ state: string }>, state: string) => {
    for (let i = 0; i < 100 && (await view()).state !== state; i++) await new Promise((r) => setTimeout(r, 100));
  };
  const resolve = (id: string, outcome: string, ref: string) =>
    stack.mpf.resolveFlow(id, { outcome, provider_reference: ref, operator: 'key recorder (replay corpus)', note: 'checked at the provider for the replay corpus' });
  return { stack, stamp, webhookUrl, recorded, ids, save, swap, link, notify, untilState, resolve };
}

/** Every path of a swap, and the merchant events of one delivered after retries. */
async function recordSwaps({ stack, webhookUrl, save, swap, untilState, resolve }: Recorder): Promise<void> {
  const ok = await stack.mpf.startSwap(swap('rec-ok', { webhook_url: webhookUrl }));
  await stack.mpf.submitPin(ok.swap.swap_id, { wallet_pin: '2468' });
  await save('swap-confirmed', ok.swap.swap_id);
  await save('events-delivered-after-retries', `events-${ok.swap.swap_id}`);

  const w = await stack.mpf.startSwap(swap('rec-wrong'));
  await stack.mpf.submitPin(w.swap.swap_id, { wallet_pin: '0000' });
  await stack.mpf.submitPin(w.swap.swap_id, { wallet_pin: '2468' });
  await save('swap-wrong-pin-then-confirmed', w.swap.swap_id);

  const three = await stack.mpf.startSwap(swap('rec-three'));
  for (const pin of ['0000', '1111', '2222']) await stack.mpf.submitPin(three.swap.swap_id, { wallet_pin: pin });
  await save('swap-three-wrong-pins', three.swap.swap_id);

  const exp = await stack.mpf.startSwap(swap('rec-expired'));
  await save('swap-expired', exp.swap.swap_id);

  const c = await stack.mpf.startSwap(swap('rec-cancel'));
  await stack.mpf.cancelSwap(c.swap.swap_id, 'recorded cancel');
  await save('swap-cancelled', c.swap.swap_id);

  const ct = await stack.mpf.startSwap(swap('rec-cancel-temporal'));
  await stack.client.workflow.getHandle(ct.swap.swap_id).cancel();
  await save('swap-cancelled-in-temporal', ct.swap.swap_id);

  // A confirmation whose answer is lost (the simulator applies it, then fails the call), with no
  // notification to settle it: needs_reconciliation, then an operator resolves it.
  const doubt = await stack.mpf.startSwap(swap('rec-doubt'));
  await stack.control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'apply_then_fail', times: 10 }], notifications: { delayMs: 60_000 } });
  await stack.mpf.submitPin(doubt.swap.swap_id, { wallet_pin: '2468' }).catch(() => undefined);
  await stack.control.clearFaults();
  await untilState(() => stack.mpf.getSwap(doubt.swap.swap_id), 'needs_reconciliation');
  if ((await stack.mpf.getSwap(doubt.swap.swap_id)).state === 'needs_reconciliation') {
    await resolve(doubt.swap.swap_id, 'confirmed', 'SIM-statement-1');
    await save('swap-needs-reconciliation-then-reconciled', doubt.swap.swap_id);
  }

  // A confirmation whose answer is lost, settled by the provider's notification while the swap
  // waits for it (before needs_reconciliation).
  const settled = await stack.mpf.startSwap(swap('rec-settled'));
  await stack.control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'apply_then_fail', times: 10 }], notifications: { delayMs: 300 } });
  await stack.mpf.submitPin(settled.swap.swap_id, { wallet_pin: '2468' }).catch(() => undefined);
  await stack.control.clearFaults();
  await untilState(() => stack.mpf.getSwap(settled.swap.swap_id), 'confirmed');
  if ((await stack.mpf.getSwap(settled.swap.swap_id)).state === 'confirmed') await save('swap-in-doubt-settled-by-notification', settled.swap.swap_id);
}

/** Flows terminated in Temporal, carried on by their next run (closedFlowWorkflow, the history saved). */
async function recordClosedFromOutside({ stack, save, swap, link, resolve }: Recorder): Promise<void> {
  const carriedOn = async (id: string): Promise<void> => {
    const first = (await stack.client.workflow.getHandle(id).describe()).runId;
    await stack.client.workflow.getHandle(id).terminate('recorded terminate');
    for (let i = 0; i < 300 && (await stack.client.workflow.getHandle(id).describe()).runId === first; i++) await new Promise((r) => setTimeout(r, 100));
  };
  const sw = await stack.mpf.startSwap(swap('rec-terminated'));
  await carriedOn(sw.swap.swap_id);
  await save('swap-terminated-carried-on', sw.swap.swap_id);

  const l = await stack.mpf.createLink(link('rec-terminated'));
  await carriedOn(l.link.link_id);
  for (let i = 0; i < 100 && (await stack.mpf.getLink(l.link.link_id)).events?.at(-1)?.type !== 'payment_link.needs_reconciliation'; i++) await new Promise((r) => setTimeout(r, 100));
  await resolve(l.link.link_id, 'failed', 'SIM-statement-2');
  await save('paylink-terminated-carried-on-then-reconciled', l.link.link_id);
}

/** Every path of a payment link. */
async function recordLinks({ stack, save, link, notify, untilState, resolve }: Recorder): Promise<void> {
  const paid = await stack.mpf.createLink(link('rec-paid'));
  await stack.control.completeLink(paid.link.payment_ref!);
  await save('paylink-paid', paid.link.link_id);

  const dup = await stack.mpf.createLink(link('rec-dup'));
  for (const [id, st] of [['n1', 'pending'], ['n2', 'successful'], ['n2', 'successful'], ['n0', 'pending'], ['n3', 'failed']] as const) {
    await notify(dup.link.link_id, dup.link.payment_ref!, id, st);
  }
  await save('paylink-paid-with-duplicates-and-out-of-order', dup.link.link_id);

  const failed = await stack.mpf.createLink(link('rec-failed'));
  await stack.control.failLink(failed.link.payment_ref!);
  await save('paylink-failed', failed.link.link_id);

  const expired = await stack.mpf.createLink(link('rec-expired'));
  await save('paylink-expired', expired.link.link_id);

  const cancelled = await stack.mpf.createLink(link('rec-cancelled'));
  await stack.mpf.cancelLink(cancelled.link.link_id, 'recorded cancel');
  await save('paylink-cancelled', cancelled.link.link_id);

  const late = await stack.mpf.createLink(link('rec-late'));
  await untilState(() => stack.mpf.getLink(late.link.link_id), 'expired');
  await notify(late.link.link_id, late.link.payment_ref!, 'late-1', 'successful');
  await untilState(() => stack.mpf.getLink(late.link.link_id), 'needs_reconciliation');
  await resolve(late.link.link_id, 'paid', late.link.payment_ref!);
  await save('paylink-paid-late', late.link.link_id);

  const mism = await stack.mpf.createLink(link('rec-mismatch'));
  await notify(mism.link.link_id, mism.link.payment_ref!, 'm-1', 'successful', { amount: 1 });
  await untilState(() => stack.mpf.getLink(mism.link.link_id), 'needs_reconciliation');
  await resolve(mism.link.link_id, 'failed', mism.link.payment_ref!);
  await save('paylink-needs-reconciliation-then-reconciled', mism.link.link_id);
}

/** The keyed records kept in Temporal: an idempotency record and a user's wrong-PIN budget. */
async function recordKeyedRecords({ stack, stamp, save }: Recorder): Promise<void> {
  const claim = await stack.mpf.idempotency.claim('merchant', `rec-idem-${stamp}`, 'POST /v1/swaps', { txn_ref: 'x' });
  if (claim.kind === 'claimed') {
    await stack.mpf.idempotency.complete(claim.workflowId, claim.claimId, { status: 201, body: { swap_id: 'swap-x' } });
    await stack.client.workflow.getHandle(claim.workflowId).terminate('recorded: the corpus needs a closed record, not a 24 h wait');
    await save('idempotency-record', claim.workflowId);
  }

  // The wrong-PIN budget of one user (shared by every gateway): a slot reserved as a swap starts
  // (its own hold, half the budget left free) and given back, a wrong PIN kept, a right one given back.
  const budget = stack.mpf.sharedPinBudget({ max: 3, timeWindowMs: 2_000 });
  for (const [wrong, options] of [[false, budget.reservation], [true, {}], [false, {}]] as const) {
    const taken = await budget.take(`user-budget-${stamp}`, options);
    if (!('slot' in taken)) throw new Error(`the recorded budget refused a take (${JSON.stringify(taken)})`);
    await taken.slot.settle(wrong);
  }
  await save('pin-budget', budget.workflowId(`user-budget-${stamp}`));
}

/**
 * A provider guard of its own id (not the stack's: its pause would hold the other recordings):
 * a breaker opened by reports, its probe, a trial claimed and its outcome closing it, a pause and
 * a resume; then a guard that continues as new after its 1000th change (its first run is saved).
 */
async function recordProviderGuard({ stack, stamp, save }: Recorder): Promise<void> {
  const settings = { ...DEFAULT_BREAKER, cooldown_ms: 500 };
  const report = (counts: OutcomeReport['counts']): OutcomeReport => ({ counts, settings });
  const start = (id: string) => stack.client.workflow.start(PROVIDER_GUARD_WORKFLOW_TYPE, { workflowId: id, taskQueue: stack.taskQueue, args: [{}] });
  const until = async (h: Awaited<ReturnType<typeof start>>, ok: (v: GuardView) => boolean) => {
    for (let i = 0; i < 200 && !ok(await h.query(guardQuery)); i++) await new Promise((r) => setTimeout(r, 100));
  };
  const h = await start(`provider-guard-rec-${stamp}`);
  await h.signal(guardOutcomesSignal, report({ confirm: { ok: 1, ambiguous: 0, throttled: 0 } }));
  await h.signal(guardOutcomesSignal, report({ confirm: { ok: 0, ambiguous: 3, throttled: 0 } }));
  // Open, then half-open after its cool-down; the probe (the categories GET) succeeds: a trial.
  await until(h, (v) => v.breakers.confirm.state === 'half_open' && v.breakers.confirm.trial !== undefined);
  // A start claims the trial and starts nothing (a reference already used): it gives it back.
  await h.executeUpdate(guardClaimTrialUpdate, { args: [{ cls: 'confirm', key: `swap-rec-unused-${stamp}` }] });
  await h.executeUpdate(guardReleaseTrialUpdate, { args: [{ cls: 'confirm', key: `swap-rec-unused-${stamp}` }] });
  await h.executeUpdate(guardClaimTrialUpdate, { args: [{ cls: 'confirm', key: `swap-rec-trial-${stamp}` }] });
  await h.signal(guardOutcomesSignal, report({ confirm: { ok: 1, ambiguous: 0, throttled: 0 } }));
  await until(h, (v) => v.breakers.confirm.state === 'closed');
  await h.executeUpdate(guardPauseUpdate, { args: [{ by: 'key rec-operator', reason: 'recorded pause' }] });
  await h.executeUpdate(guardResumeUpdate, { args: [{ by: 'key rec-operator' }] });
  await h.terminate('recorded: a guard never ends on its own');
  await save('provider-guard', h.workflowId);

  const long = await start(`provider-guard-rec-long-${stamp}`);
  // The smallest report (nothing counted, no settings) still counts as a change.
  const empty = { counts: {} } as OutcomeReport;
  for (let i = 0; i < 1001; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, 1001 - i) }, () => long.signal(guardOutcomesSignal, empty)));
  }
  const first = long.firstExecutionRunId;
  for (let i = 0; i < 300 && (await stack.client.workflow.getHandle(long.workflowId).describe()).runId === first; i++) await new Promise((r) => setTimeout(r, 100));
  await stack.client.workflow.getHandle(long.workflowId).terminate('recorded: a guard never ends on its own');
  await save('provider-guard-continued-as-new', long.workflowId, first);
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}

/**
 * The soak's two phases, small (`npm run soak -- --swaps 0 --links 0 --incident --release …`), on
 * the production topology (mpf cluster's PostgreSQL, Temporal server, simulator, 2 workers, 2
 * gateways on loopback):
 *
 * - the provider incident: confirmations hang for a while, the same seeded swaps run once with the
 *   breaker effectively off and once with it on. With it, fewer swaps end in needs_reconciliation
 *   (no more than the confirmations that went out before it held them), the confirm breaker opens
 *   and closes by itself, and the swaps it held on every attempt end expired, never sent. Swap
 *   windows of 10 s and an incident that ends before the breaker's probe: where it bounds the
 *   doubt (docs/operations/provider-outages.md, "Measured in the soak", has the other cases);
 * - the release: a second release started beside the first while flows wait at every wait,
 *   promoted, rolled back, with the seeded faults: no nondeterminism error, no failed workflow task.
 *
 * Every flow checked against the simulator's ledger: 0 lost, 0 duplicate, 0 inconsistent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runRepoScript } from '../helpers/processes';

const TIMEOUT_MS = 9 * 60_000;

test('the soak\'s incident and release phases: fewer swaps in doubt with the breaker, a release promoted and rolled back with 0 nondeterminism', { timeout: TIMEOUT_MS + 60_000 }, async (t) => {
  const args = [
    '--swaps', '0', '--links', '0', '--seed', '11', '--settle-wait', '10', '--link-lifetime', '60',
    '--incident', '--incident-swaps', '20', '--incident-seconds', '36', '--incident-window', '10', '--incident-lead', '6',
    '--release', '--release-flows', '1', '--release-window', '150',
  ];
  const { code, output: out } = await runRepoScript('bench/soak/main.ts', args, TIMEOUT_MS);
  t.diagnostic(out.split('\n').filter((l) => /^(-- | {2}(without|with) the breaker| {4}| {2}deployment| {2}parked| {2}tasks| {2}and \d+| {2}\d+ (flows|histories)|soak:)/.test(l)).join('\n'));

  const last = out.trimEnd().split('\n').at(-1) ?? '';
  const m = /^soak: (\d+) flows, (\d+) lost, (\d+) duplicate side effects, (\d+) inconsistent, (\d+) nondeterminism errors, (\d+) failed workflow tasks; needs_reconciliation in the incident: (\d+) without the breaker, (\d+) with it$/.exec(last);
  assert.ok(m, `the last line has every figure:\n${out}`);
  const [flows, lost, duplicate, inconsistent, nondeterminism, failedTasks, without, withBreaker] = m.slice(1).map(Number) as number[];
  assert.deepEqual({ lost, duplicate, inconsistent, nondeterminism, failedTasks }, { lost: 0, duplicate: 0, inconsistent: 0, nondeterminism: 0, failedTasks: 0 }, out);
  assert.ok(flows! >= 40 + 9, `both incident runs and the release's flows were checked:\n${out}`);
  assert.equal(code, 0, out);

  // The incident: the breaker opened and closed by itself, and fewer swaps were left in doubt with it.
  const withRun = /\n {2}with the breaker: incident[^\n]*\n {4}confirm breaker: ([^\n]*)\n {4}confirmations the provider received in the incident before the breaker opened: (\d+), while it was open: (\d+); needs_reconciliation: (\d+)/.exec(out);
  assert.ok(withRun, `the run with the breaker has its figures:\n${out}`);
  assert.match(withRun[1]!, /^open at \+[\d.]+ s .*closed at \+[\d.]+ s/, 'the confirm breaker opened, then closed by itself');
  const sent = Number(withRun[2]) + Number(withRun[3]);
  // A swap held on every attempt whose window closed as a ScheduleToClose timeout keeps its doubt
  // though nothing was sent (a known limit, docs/operations/provider-outages.md): not one of these.
  const heldNeverSent = Number(/held confirmations ended: [^\n]*?(\d+) needs_reconciliation \(never sent\)/.exec(out)?.[1] ?? 0);
  assert.ok(withBreaker! - heldNeverSent <= sent, `needs_reconciliation with the breaker (${withBreaker}, ${heldNeverSent} of them never sent) is bounded by the confirmations that went out before it held them (${sent})`);
  assert.ok(withBreaker! < without!, `fewer swaps in doubt with the breaker (${withBreaker}) than without (${without})`);
  assert.match(out, /\n {2}without the breaker: [^\n]*\n {4}confirm breaker: never opened/, 'the breaker stayed closed in the run without it');
  assert.match(out, /held confirmations ended: [^\n]*expired/, 'swaps held until their window closed expired, never sent');

  // The release: flows parked at every wait when the second release was promoted, then rolled back.
  const parked = /\n {2}parked at the promotion: ([^\n]*)/.exec(out)?.[1] ?? '';
  for (const wait of ['awaiting_pin', 'confirming', 'awaiting_payment', 'needs_reconciliation']) assert.match(parked, new RegExp(`\\d+ ${wait}`), `a flow at ${wait} when promoted:\n${out}`);
  assert.match(out, /workflows that ran on both: [1-9]\d*; pinned swaps that moved: 0\n/, 'auto-upgrading workflows moved to the second release and back; no pinned swap moved');
  assert.match(out, /no process left/, 'the soak stopped everything it started');
});

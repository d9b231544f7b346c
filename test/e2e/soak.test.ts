/**
 * The chaos soak, small. `npm run soak` on the production topology (mpf cluster's
 * PostgreSQL, Temporal server, simulator, 2 workers, 2 gateways on loopback) with 12 swaps and 12
 * payment links: seeded provider faults, workers SIGKILLed and restarted, one gateway, the
 * Temporal server and the identity provider killed and restarted once; every flow checked against
 * the simulator's ledger. The cluster authorises every call by default: workers and gateways hold
 * tokens of 60 s (the soak's default --token-ttl), renewed at 45 s, so the gateways renew theirs
 * during the soak, and the IdP's outage (5-10 s) ends before a token it interrupts expires: flows
 * keep running. (An outage longer than that margin stalls every call until the IdP is back: the
 * gateways answer 503 temporal_unavailable meanwhile, test/unit/gateway-unavailable-errors.test.ts.)
 * Its last line must say no flow was lost, no side effect duplicated and no state contradicts the
 * ledger; it must have stopped everything it started.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runRepoScript } from '../helpers/processes';

const TIMEOUT_MS = 6 * 60_000;

test('a small chaos soak on the authorising topology: 12 swaps + 12 links, worker, gateway, Temporal server and identity provider kills, tokens renewed → 0 lost, 0 duplicate, 0 inconsistent', { timeout: TIMEOUT_MS + 60_000 }, async () => {
  const args = [
    '--swaps', '12', '--links', '12', '--concurrency', '8', '--seed', '10',
    '--max-minutes', '3', '--swap-window', '30', '--link-lifetime', '25', '--settle-wait', '40',
    '--kill-every', '3-6', '--in-flight-kills', '1',
  ];
  // As `npm run soak` runs it (tsx's CLI relays SIGTERM to the soak, which then stops its topology).
  const { code, output: out } = await runRepoScript('bench/soak/main.ts', args, TIMEOUT_MS);

  const lines = out.trimEnd().split('\n');
  const last = lines.at(-1) ?? '';
  assert.match(last, /^soak: 24 flows, \d+ lost, \d+ duplicate side effects, \d+ inconsistent$/, out);
  assert.equal(last, 'soak: 24 flows, 0 lost, 0 duplicate side effects, 0 inconsistent', out);
  assert.equal(code, 0, out);
  // The chaos happened: workers, a gateway and the Temporal server were killed and restarted.
  const kills = /worker \(SIGKILL\)\s+(\d+)/.exec(out);
  assert.ok(kills && Number(kills[1]) >= 2, `at least two worker kills:\n${out}`);
  assert.match(out, /gateway \(SIGKILL\)\s+1\s+1/, 'one gateway killed and restarted');
  assert.match(out, /Temporal server \(SIGKILL\)\s+1\s+1/, 'the Temporal server killed and restarted');
  assert.match(out, /identity provider \(SIGKILL\)\s+1\s+1/, 'the identity provider killed and restarted');
  const renewed = /tokens: every call to Temporal authorised; workers and gateways renewed theirs (\d+) time/.exec(out);
  assert.ok(renewed && Number(renewed[1]) >= 2, `tokens renewed during the soak (two gateways, 60 s tokens):\n${out}`);
  assert.doesNotMatch(out, /eyJ[\w-]{10,}\./, 'the soak prints no token');
  assert.match(out, /no process left/, 'the soak stopped everything it started');
});

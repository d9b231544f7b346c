/**
 * The provider guard on a real stack: the kill switch (an operator's pause stops every
 * money-moving call deployment-wide, checked against the simulator's ledger, while views keep
 * answering; a swap whose window closes while paused expires with nothing sent) and the
 * confirmation breaker (it opens on ambiguous outcomes, holds further confirmations, probes the
 * provider after its cool-down and closes by itself).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyringSource, newKey } from '../../src/auth/keyring';
import { eventSchemaIssues } from '../../src/contract/merchant-event-schemas';
import { NO_MERCHANT_EVENTS } from '../../src/merchant-events/config';
import { startEventListener, type RunningListener } from '../../src/merchant-events/listener';
import { generateSecret } from '../../src/merchant-events/signing';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller, type GatewayHarness, startGatewayStack, workflowExists } from '../helpers/gateway';
import { Client } from '@temporalio/client';
import { MpfClient } from '../../src/starter/client/mpf-client';
import { runMpf } from '../helpers/processes';
import { eventually } from '../helpers/stack';
import { ProviderGuardLink } from '../../src/temporal/provider-guard-link';
import { claimGuardTrial, GuardClaimRefusedError } from '../../src/temporal/provider-guard-reading';
import { type GuardView, type MoneyClass, providerGuardWorkflowId } from '../../src/contract/provider-guard';
import { guardOutcomesSignal } from '../../src/workflows/provider-guard';
import { InputError } from '../../src/starter/client/errors';

const operator = newKey({ id: 'guard-operator', role: 'operator', label: 'on call' });
const backend = newKey({ id: 'guard-backend', role: 'backend' });

describe('the provider guard', () => {
  const secret = generateSecret();
  let h: GatewayHarness;
  let listener: RunningListener;
  /** The provider.* events the merchant's endpoint received (verified, each valid against its schema). */
  const guardEvents = (type: string) =>
    listener.deliveries.filter((d) => d.verified && d.event?.type === type).map((d) => {
      assert.deepEqual(eventSchemaIssues(d.event), [], `${type} validates`);
      return d.event!;
    });
  const as = (key: string) => gatewayCaller(h.gw.url, key);
  const confirms = async (ref: string): Promise<number> => (await h.stack.control.ledger({ ref, endpoint: 'swap.confirm' })).requests.length;
  const start = async (ref: string) => {
    const r = await as(backend.key).api('POST', '/v1/swaps', swapBody(ref));
    assert.equal(r.status, 201, r.text);
    return r.json.swap_id as string;
  };
  const state = async (swapId: string) => (await as(backend.key).api('GET', `/v1/swaps/${swapId}`)).json as { state: string; reason?: string };
  const resume = () => as(operator.key).api('POST', '/v1/admin/provider/resume');
  /** The swap ends expired, held by the guard, and the provider received no confirmation of it. */
  const expiresNeverSent = async (swapId: string, ref: string) => {
    const view = await eventually(async () => {
      const v = await state(swapId);
      return v.state !== 'awaiting_pin' && v.state !== 'confirming' && v;
    }, 30_000, 'the swap ends');
    assert.equal(view.state, 'expired', JSON.stringify(view));
    assert.match(view.reason ?? '', /held by the provider guard/);
    assert.equal(await confirms(ref), 0);
  };

  before(async () => {
    listener = await startEventListener({ secrets: [secret] });
    h = await startGatewayStack({
      events: { ...NO_MERCHANT_EVENTS, urls: [listener.url], secrets: [secret], schedule: { ...NO_MERCHANT_EVENTS.schedule, initial_interval_ms: 200 } },
      breaker: { ambiguous_count: 2, cooldown_ms: 2_000 },
      gateway: { keyring: new KeyringSource({ json: JSON.stringify([operator.entry, backend.entry]) }) },
    });
  });
  after(async () => {
    await h?.stop();
    await listener?.close();
  });

  test('with no worker running, the guard is still read from its memo, pause and all', async () => {
    assert.equal((await as(operator.key).api('POST', '/v1/admin/provider/pause', { reason: 'memo test' })).status, 200);
    await h.stack.stopWorker();
    const link = new ProviderGuardLink({ client: h.stack.client, taskQueue: h.stack.taskQueue });
    try {
      await new Promise((r) => setTimeout(r, 6_000)); // past the 5 s a query-only reading would have lasted
      await link.start();
      assert.match(link.holdReason('confirm') ?? '', /paused by key guard-operator/, 'a fresh reading, no worker asked');
    } finally {
      await link.close();
      await h.stack.startWorker();
      await eventually(async () => (await resume()).status === 200, 30_000, 'resumed');
    }
    const after = new ProviderGuardLink({ client: h.stack.client, taskQueue: h.stack.taskQueue });
    await after.start();
    try {
      await eventually(async () => after.holdReason('confirm') === undefined, 10_000, 'the resume is read');
    } finally {
      await after.close();
    }
  });

  test('with every worker stopped, GET /v1/admin/provider and mpf provider status answer with the last view, pause and all', async () => {
    assert.equal((await as(operator.key).api('POST', '/v1/admin/provider/pause', { reason: 'status without workers' })).status, 200);
    await h.stack.stopWorker();
    try {
      const status = await as(operator.key).api('GET', '/v1/admin/provider');
      assert.equal(status.status, 200, status.text);
      assert.equal(status.json.paused?.reason, 'status without workers');
      assert.equal(status.json.audit.at(-1).action, 'pause');
      assert.equal(typeof status.json.settings.slow_ms, 'number');
      const cli = await runMpf(['provider', 'status', '--json'], { PATH: process.env.PATH, HOME: process.env.HOME, MPF_GATEWAY_URL: h.gw.url, MPF_API_KEY: operator.key });
      assert.equal(cli.code, 0, cli.stderr);
      assert.equal((JSON.parse(cli.stdout) as { paused?: { reason?: string } }).paused?.reason, 'status without workers');
    } finally {
      await h.stack.startWorker();
      await eventually(async () => (await resume()).status === 200, 30_000, 'resumed');
    }
  });

  test('a worker and a client in one process read the guard once a second between them, not once each', async () => {
    let describes = 0;
    const guardId = `provider-guard-${h.stack.taskQueue}`;
    // Subscribed last, this client is the one the process's reader reads with: every reading counts here.
    const client = new Client({
      connection: h.stack.client.connection,
      namespace: h.stack.client.options.namespace,
      dataConverter: h.stack.client.options.dataConverter,
      interceptors: { workflow: [{ describe: (input, next) => ((describes += input.workflowExecution.workflowId === guardId ? 1 : 0), next(input)) }] },
    });
    const link = new ProviderGuardLink({ client, taskQueue: h.stack.taskQueue });
    const mpf = new MpfClient({ client, taskQueue: h.stack.taskQueue, keys: h.stack.keys, publicUrl: h.gw.url });
    await link.start();
    const stop = mpf.watchProviderGuard();
    try {
      await new Promise((r) => setTimeout(r, 1_500));
      describes = 0;
      await new Promise((r) => setTimeout(r, 5_000));
      assert.ok(describes >= 1 && describes <= 7, `one poll for the worker's link and the client: ${describes} describes in 5 s`);
      assert.equal(link.holdReason('confirm'), undefined, 'and the link reads it');
    } finally {
      await stop();
      await link.close();
    }
  });

  test('a pause is an operator action recorded with its key; a backend key is refused with 403', async () => {
    const refused = await as(backend.key).api('POST', '/v1/admin/provider/pause', { reason: 'not mine to pull' });
    assert.equal(refused.status, 403);
    const paused = await as(operator.key).api('POST', '/v1/admin/provider/pause', { reason: 'provider incident INC-1' });
    try {
      assert.equal(paused.status, 200, paused.text);
      assert.equal(paused.json.paused.by, 'key guard-operator (on call)');
      assert.equal(paused.json.paused.reason, 'provider incident INC-1');
      const status = await as(operator.key).api('GET', '/v1/admin/provider');
      assert.equal(status.json.audit.at(-1).action, 'pause');
    } finally {
      assert.equal((await resume()).status, 200);
    }
    // The merchant's endpoint is told both, signed like every event.
    const paused2 = await eventually(async () => guardEvents('provider.paused')[0], 15_000, 'provider.paused delivered');
    assert.equal((paused2.data as { by?: string }).by, 'key guard-operator (on call)');
    await eventually(async () => guardEvents('provider.resumed').length > 0, 15_000, 'provider.resumed delivered');
  });

  test('an operator action or a trial claim the guard refuses names the field, by the failure\'s type, and changes nothing', async () => {
    const mpf = h.stack.mpf;
    await assert.rejects(mpf.pauseProvider('', 'incident'), (e: unknown) => e instanceof InputError && e.field === 'by' && /^by: must name who acts/.test(e.message));
    await assert.rejects(mpf.pauseProvider('key guard-operator', 'x'.repeat(501)), (e: unknown) => e instanceof InputError && e.field === 'reason');
    await assert.rejects(mpf.resumeProvider('o'.repeat(201)), (e: unknown) => e instanceof InputError && e.field === 'by');
    assert.equal((await mpf.providerStatus())?.paused, undefined, 'nothing paused');
    const workflowId = providerGuardWorkflowId(h.stack.taskQueue);
    await assert.rejects(
      claimGuardTrial(h.stack.client, workflowId, 'refund' as MoneyClass, 'swap-x', 10_000),
      (e: unknown) => e instanceof GuardClaimRefusedError && e.field === 'cls',
    );
    await assert.rejects(claimGuardTrial(h.stack.client, workflowId, 'confirm', 'k'.repeat(301), 10_000), (e: unknown) => e instanceof GuardClaimRefusedError && e.field === 'key');
  });

  test('while paused a new swap is refused with 503 provider_unavailable and Retry-After, and nothing starts', async () => {
    assert.equal((await as(operator.key).api('POST', '/v1/admin/provider/pause', { reason: 'drill' })).status, 200);
    try {
      const ref = uniqueRef('guard-paused');
      const r = await as(backend.key).api('POST', '/v1/swaps', swapBody(ref));
      assert.equal(r.status, 503, r.text);
      assert.equal(r.json.error, 'provider_unavailable');
      assert.match(String(r.json.message), /paused by key guard-operator/);
      assert.ok(Number(r.headers['retry-after']) > 0, 'Retry-After');
      assert.equal(await workflowExists(h.stack, `swap-${ref}`), false);
      assert.equal((await h.stack.control.ledger({ ref })).requests.length, 0);
    } finally {
      await resume();
    }
  });

  test('a PIN sent while paused is held, nothing is sent; views, lists and notifications keep working; resume lets it confirm', async () => {
    const ref = uniqueRef('guard-held');
    const swapId = await start(ref);
    const link = await as(backend.key).api('POST', '/v1/payment-links', linkBody(uniqueRef('guard-link')));
    assert.equal(link.status, 201, link.text);
    assert.equal((await as(operator.key).api('POST', '/v1/admin/provider/pause', { reason: 'hold confirmations' })).status, 200);
    try {
      await h.stack.mpf.submitPin(swapId, { wallet_pin: SIM_PIN }, { wait: false });
      await eventually(async () => (await state(swapId)).state === 'confirming', 10_000, 'the swap confirming');
      // The customer pays meanwhile: the provider's notification is taken and the link ends paid.
      await h.stack.control.completeLink(link.json.payment_ref as string);
      await eventually(async () => (await as(backend.key).api('GET', `/v1/payment-links/${link.json.link_id as string}`)).json.state === 'paid', 15_000, 'the link paid while paused');
      assert.equal((await as(backend.key).api('GET', '/v1/swaps?limit=5')).status, 200, 'lists answer');
      await new Promise((r) => setTimeout(r, 3_000));
      assert.equal(await confirms(ref), 0, 'no confirmation reached the provider while paused');
    } finally {
      assert.equal((await resume()).status, 200);
    }
    await eventually(async () => (await state(swapId)).state === 'confirmed', 20_000, 'confirmed after resume');
    assert.equal(await confirms(ref), 1);
  });

  test('a swap whose window closes while its confirmation is held expires, with nothing sent and nothing in doubt', async () => {
    const ref = uniqueRef('guard-expire');
    await h.stack.control.setConfig({ swapExpiresInSecondsFor: { [ref]: 5 } });
    const swapId = await start(ref);
    assert.equal((await as(operator.key).api('POST', '/v1/admin/provider/pause', { reason: 'expire test' })).status, 200);
    try {
      await h.stack.mpf.submitPin(swapId, { wallet_pin: SIM_PIN }, { wait: false });
      await expiresNeverSent(swapId, ref);
    } finally {
      await resume();
      await h.stack.control.setConfig({ swapExpiresInSecondsFor: { [ref]: null } });
    }
  });

  test('a held confirmation whose window closes while no worker runs its next retry also expires, nothing sent', async () => {
    const ref = uniqueRef('guard-expire-noworker');
    await h.stack.control.setConfig({ swapExpiresInSecondsFor: { [ref]: 8 } });
    const swapId = await start(ref);
    assert.equal((await as(operator.key).api('POST', '/v1/admin/provider/pause', { reason: 'expire without a worker' })).status, 200);
    try {
      await h.stack.mpf.submitPin(swapId, { wallet_pin: SIM_PIN }, { wait: false });
      await new Promise((r) => setTimeout(r, 2_500)); // held at least once
      await h.stack.stopWorker(); // the next held retry waits for a worker past the window: a schedule-to-close timeout
      await new Promise((r) => setTimeout(r, 8_000));
      await h.stack.startWorker();
      await expiresNeverSent(swapId, ref);
    } finally {
      await h.stack.startWorker().catch(() => undefined);
      await eventually(async () => (await resume()).status === 200, 30_000, 'resumed');
      await h.stack.control.setConfig({ swapExpiresInSecondsFor: { [ref]: null } });
    }
  });

  test('ambiguous confirmations open the confirm breaker, which holds the rest, probes and closes by itself', async () => {
    const ref = uniqueRef('guard-breaker');
    const swapId = await start(ref);
    await h.stack.control.setRefFaults(ref, [{ endpoint: 'swap.confirm', kind: 'status5xx', status: 503 }]);
    try {
      await h.stack.mpf.submitPin(swapId, { wallet_pin: SIM_PIN }, { wait: false });
      const open = await eventually(async () => {
        const g = (await as(operator.key).api('GET', '/v1/admin/provider')).json;
        return g.breakers.confirm.state !== 'closed' && g;
      }, 30_000, 'the confirm breaker opens');
      assert.match(open.breakers.confirm.reason ?? '', /ambiguous/);
      assert.equal(open.breakers.initiate.state, 'closed', 'other classes stay closed');
      const sent = await confirms(ref);
      assert.ok(sent >= 2, `${sent} ambiguous confirmations before it opened`);
      await new Promise((r) => setTimeout(r, 1_500));
      assert.ok((await confirms(ref)) <= sent + 1, 'held while open (at most the one in flight)');
      // A new swap is still allowed: the initiate class is healthy.
      await start(uniqueRef('guard-other'));
    } finally {
      await h.stack.control.clearRefFaults(ref);
    }
    await eventually(async () => (await as(operator.key).api('GET', '/v1/admin/provider')).json.breakers.confirm.state === 'closed', 30_000, 'the probe closes it');
    await eventually(async () => (await state(swapId)).state === 'confirmed', 30_000, 'the held confirmation goes on and confirms');
    const opened = await eventually(async () => guardEvents('provider.breaker_opened').find((e) => (e.data as { class?: string }).class === 'confirm'), 15_000, 'provider.breaker_opened delivered');
    assert.match(String((opened.data as { reason?: string }).reason), /ambiguous/);
    await eventually(async () => guardEvents('provider.breaker_closed').some((e) => (e.data as { class?: string }).class === 'confirm'), 15_000, 'provider.breaker_closed delivered');
    const status = (await as(operator.key).api('GET', '/v1/admin/provider')).json;
    assert.ok((status.events as Array<{ type: string }>).some((e) => e.type === 'provider.breaker_closed'), 'the status lists the guard events');
  });

  test('hung confirmations open the breaker before any of them times out, and after its probe only one trial call is sent at a time', async () => {
    await h.stack.control.setConfig({ swapExpiresInSeconds: 180 });
    const hung = [uniqueRef('guard-hang-a'), uniqueRef('guard-hang-b')];
    const held = [uniqueRef('guard-held-c'), uniqueRef('guard-held-d')];
    const ids = new Map<string, string>();
    for (const ref of [...hung, ...held]) ids.set(ref, await start(ref));
    const hang = [{ endpoint: 'swap.confirm' as const, kind: 'hang' as const, maxMs: 60_000 }];
    for (const ref of [...hung, ...held]) await h.stack.control.setRefFaults(ref, hang);
    try {
      for (const ref of hung) await h.stack.mpf.submitPin(ids.get(ref)!, { wallet_pin: SIM_PIN }, { wait: false });
      const open = await eventually(async () => {
        const g = (await as(operator.key).api('GET', '/v1/admin/provider')).json;
        return g.breakers.confirm.state === 'open' && g;
      }, 30_000, 'the confirm breaker opens');
      const firstSent = Math.min(...(await h.stack.control.ledger({ endpoint: 'swap.confirm' })).requests.filter((r) => hung.includes(r.ref!)).map((r) => Date.parse(r.at)));
      // The provider client gives up after 10 s: the slow notice opened it while both calls still hung.
      assert.ok(Date.parse(open.breakers.confirm.since) - firstSent < 10_000, `opened ${Date.parse(open.breakers.confirm.since) - firstSent} ms after the first hung confirmation was sent`);
      for (const ref of held) await h.stack.mpf.submitPin(ids.get(ref)!, { wallet_pin: SIM_PIN }, { wait: false });
      // Cool-down 2 s, the GET succeeds (categories do not hang): one held confirmation is the trial.
      const trial = await eventually(async () => {
        const g = (await as(operator.key).api('GET', '/v1/admin/provider')).json;
        return g.breakers.confirm.trial?.key && g.breakers.confirm.trial;
      }, 30_000, 'a held confirmation claims the trial');
      // Held: C and D (never sent), and A or B once their hung call timed out and their retry waits.
      const trialRef = [...hung, ...held].find((ref) => ids.get(ref) === trial.key);
      assert.ok(trialRef, `the trial is one of the held swaps' (${trial.key})`);
      const sentSinceClaim = async () =>
        (await h.stack.control.ledger({ endpoint: 'swap.confirm' })).requests.filter((r) => [...hung, ...held].includes(r.ref!) && Date.parse(r.at) >= Date.parse(trial.claimed_at) - 250);
      await eventually(async () => (await sentSinceClaim()).length >= 1, 10_000, 'the trial confirmation is sent');
      await new Promise((r) => setTimeout(r, 1_500));
      assert.deepEqual((await sentSinceClaim()).map((r) => r.ref), [trialRef], 'only the trial is sent while it is out');
      await eventually(async () => (await as(operator.key).api('GET', '/v1/admin/provider')).json.breakers.confirm.state === 'open', 15_000, 'the hung trial re-opens it');
    } finally {
      for (const ref of [...hung, ...held]) await h.stack.control.clearRefFaults(ref);
    }
    await eventually(async () => (await as(operator.key).api('GET', '/v1/admin/provider')).json.breakers.confirm.state === 'closed', 60_000, 'a later trial is answered and closes it');
    for (const ref of held) {
      await eventually(async () => ['confirmed', 'needs_reconciliation', 'confirming'].includes((await state(ids.get(ref)!)).state), 60_000, `${ref} goes on`);
    }
    // What each swap says agrees with the provider: confirmed only where the conversion was applied, once.
    for (const ref of [...hung, ...held]) {
      const s = await state(ids.get(ref)!);
      const applied = (await h.stack.control.ledger({ ref })).effects.filter((e) => e.kind === 'swap.confirmed').length;
      if (s.state === 'confirmed') assert.equal(applied, 1, `${ref}: confirmed, applied ${applied} times`);
      assert.ok(applied <= 1, `${ref}: applied ${applied} times`);
    }
  });
  test('a start that claims the half-open trial but starts nothing (a reference already used, a field refused) gives it back, and the next new swap is the trial', async () => {
    const admin = async () => (await as(operator.key).api('GET', '/v1/admin/provider')).json as GuardView;
    const usedRef = uniqueRef('guard-trial-used');
    await start(usedRef);
    // Two ambiguous initializations, as a worker reports them (with the workers' own settings): the initiate breaker opens.
    const guard = h.stack.client.workflow.getHandle(providerGuardWorkflowId(h.stack.taskQueue));
    await guard.signal(guardOutcomesSignal, { counts: { initiate: { ok: 0, ambiguous: 2, throttled: 0 } }, settings: (await admin()).settings });
    await eventually(async () => (await admin()).breakers.initiate.state === 'open', 15_000, 'the initiate breaker opens');
    await eventually(async () => {
      const b = (await admin()).breakers.initiate;
      return b.state === 'half_open' && b.trial !== undefined && b.trial.key === undefined;
    }, 30_000, 'its probe succeeds: half-open, the trial unclaimed');
    // The reference is used: 409 with the existing swap (once the gateway's reading, each second, saw it half-open).
    const dup = await eventually(async () => {
      const r = await as(backend.key).api('POST', '/v1/swaps', swapBody(usedRef));
      return r.status !== 503 && r;
    }, 10_000, 'the gateway reads the half-open breaker');
    assert.equal(dup.status, 409, dup.text);
    assert.equal((await admin()).breakers.initiate.trial?.key, undefined, 'the duplicate start gave the trial back');
    const bad = await as(backend.key).api('POST', '/v1/swaps', swapBody(uniqueRef('guard-trial-bad'), { amount: -5 }));
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.json.field, 'amount');
    const still = (await admin()).breakers.initiate;
    assert.equal(still.state, 'half_open');
    assert.equal(still.trial?.key, undefined, 'the refused start gave it back too');
    // The next new swap is the trial; its initialization answered, the breaker closes.
    const trialRef = uniqueRef('guard-trial-new');
    const r = await as(backend.key).api('POST', '/v1/swaps', swapBody(trialRef));
    assert.equal(r.status, 201, r.text);
    await eventually(async () => (await admin()).breakers.initiate.state === 'closed', 15_000, "the trial's answer closes the breaker");
    assert.equal((await h.stack.control.ledger({ ref: trialRef, endpoint: 'swap.init' })).requests.length, 1);
  });
});

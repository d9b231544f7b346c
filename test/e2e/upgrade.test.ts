/**
 * An upgrade on real processes: the previous release's workflows (test/upgrade/<release>/, its
 * bundle built by `npm run bundle-workflows -- --from <commit>`, so no git history is needed here)
 * run in an `mpf worker` process; flows are parked at every wait a flow has; that worker stops and
 * the current release's `mpf worker` starts; every flow is driven to its end. All end true against
 * the simulator's ledger, no worker log has a nondeterminism error and no history a failed
 * workflow task.
 */
import { after, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { decodeOptionalFailureToOptionalError } from '@temporalio/common/lib/internal-non-workflow';
import { tsToDate } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { clientDataConverter } from '../../src/codec/data-converter';
import { GrpcStatus, hasGrpcCode } from '../../src/temporal/grpc-status';
import { startEventListener, type RunningListener } from '../../src/merchant-events/listener';
import { generateSecret } from '../../src/merchant-events/signing';
import { MpfClient } from '../../src/starter/client/mpf-client';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { type MpfProcess, spawnMpf } from '../helpers/processes';
import { eventually, startStack, type Stack, workerProcessEnv } from '../helpers/stack';
import { promoteVersion } from '../helpers/versioning';

const UPGRADE_DIR = path.resolve(__dirname, '..', 'upgrade');
/** The previous release kept here (the newest directory by its release.json). */
function previousRelease(): { dir: string; release: string; commit: string } {
  const dirs = fs.readdirSync(UPGRADE_DIR).filter((d) => fs.existsSync(path.join(UPGRADE_DIR, d, 'workflow-bundle.js')));
  assert.ok(dirs.length > 0, `no release bundle under ${UPGRADE_DIR}: run npm run bundle-workflows -- --from <commit> --out test/upgrade/<release>`);
  const releases = dirs.map((d) => ({ dir: path.join(UPGRADE_DIR, d), ...(JSON.parse(fs.readFileSync(path.join(UPGRADE_DIR, d, 'release.json'), 'utf8')) as { release: string; commit: string; bundled_at: string }) }));
  return releases.sort((a, b) => a.bundled_at.localeCompare(b.bundled_at)).at(-1)!;
}

const NONDETERMINISM = /TMPRL1100|[Nn]ondeterminism|nondeterministic/;

interface FailedTask {
  workflowId: string;
  eventId: string;
  at: Date;
  cause: string;
  identity: string;
  message: string;
  stack: string[];
}

/** The WorkflowTaskFailed events of a flow's history, their failure decoded (message and stack are sealed by the codec). */
async function failedWorkflowTasks(stack: Stack, workflowId: string): Promise<FailedTask[]> {
  const converter = clientDataConverter(stack.keys);
  const history = await stack.client.workflow
    .getHandle(workflowId)
    .fetchHistory()
    .catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError || hasGrpcCode(err, GrpcStatus.NOT_FOUND)) return undefined; // a flow with no events workflow
      throw err;
    });
  const events = history?.events ?? [];
  const out: FailedTask[] = [];
  for (const e of events) {
    const a = e.workflowTaskFailedEventAttributes;
    if (!a) continue;
    const err = await decodeOptionalFailureToOptionalError(converter, a.failure).catch((x: unknown) => new Error(`(the failure could not be decoded: ${String(x)})`));
    out.push({
      workflowId,
      eventId: String(e.eventId),
      at: tsToDate(e.eventTime!),
      cause: temporal.api.enums.v1.WorkflowTaskFailedCause[a.cause ?? 0] ?? String(a.cause),
      identity: a.identity ?? '',
      message: err?.message ?? a.failure?.message ?? '(no failure)',
      stack: (err?.stack ?? a.failure?.stackTrace ?? '').split('\n').slice(1, 6).map((l) => l.trim()),
    });
  }
  return out;
}

/** The last events of a flow's history: type and time, a workflow task's outcome and a signal's name. */
async function historyTail(stack: Stack, workflowId: string, n = 25): Promise<string> {
  const events = (await stack.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  return events
    .slice(-n)
    .map((e) => `${e.eventId} ${tsToDate(e.eventTime!).toISOString().slice(11, 23)} ${temporal.api.enums.v1.EventType[e.eventType ?? 0]}${e.workflowExecutionSignaledEventAttributes ? `(${e.workflowExecutionSignaledEventAttributes.signalName})` : ''}${e.workflowTaskCompletedEventAttributes ? `(${e.workflowTaskCompletedEventAttributes.identity})` : ''}`)
    .join(', ');
}

/** A failed task's cause, its failure and the worker log lines about it: its flow's, or a warning or an error within 5 s of it. */
function describeFailedTask(f: FailedTask, workerLogs: string[]): string {
  const near = workerLogs
    .join('\n')
    .split('\n')
    .filter((line) => {
      if (line.includes(f.workflowId)) return true;
      const m = /"level":(\d+),"time":"([^"]+)"/.exec(line);
      return m !== null && Number(m[1]) >= 40 && Math.abs(Date.parse(m[2]!) - f.at.getTime()) <= 5_000;
    })
    .map((l) => `    ${l.length > 600 ? `${l.slice(0, 600)}…` : l}`);
  return [
    `${f.workflowId}: workflow task failed (event ${f.eventId}, ${f.at.toISOString()}, by ${f.identity}): ${f.cause}: ${f.message}`,
    ...f.stack.map((l) => `    ${l}`),
    `  worker log lines about it (${near.length}):`,
    ...near.slice(-20),
  ].join('\n');
}
/** How long a swap whose confirmation was lost waits for the provider's notification, for the swap meant to reach needs_reconciliation. */
const SETTLE_WAIT_SECONDS = 25;
/**
 * The settle wait of the swap parked in doubt across the upgrade: longer than the test, so that its
 * timer is still running when the notification comes, however slowly the machine parks the other
 * flows, stops one worker and bundles and starts the next (with a 25 s wait, a loaded machine's
 * upgrade outlasted it and the swap went to needs_reconciliation before its notification came).
 */
const DOUBT_SETTLE_WAIT_SECONDS = 600;

describe('an upgrade: flows parked on the previous release finish on the current one (mpf worker processes)', () => {
  let stack: Stack;
  let shortLinks: MpfClient;
  let patientSwaps: MpfClient;
  let receiver: RunningListener;
  let receiverUp = false;
  const secret = generateSecret();
  const workers: MpfProcess[] = [];
  const logs: string[] = [];
  const prev = previousRelease();

  // Each release a version of this test's own deployment (Worker Deployment Versioning): the
  // previous release's bundle as build id <release>, this one as its default build id.
  const deployment = `mpf-upgrade-${process.pid}-${Date.now().toString(36)}`;
  const startWorker = async (bundle?: string): Promise<MpfProcess> => {
    const w = spawnMpf(['worker'], {
      ...workerProcessEnv(stack),
      WORKER_DEPLOYMENT_NAME: deployment,
      ...(bundle ? { WORKER_BUILD_ID: prev.release } : {}),
      LOG_LEVEL: 'info',
      MERCHANT_WEBHOOK_SECRET: secret,
      MERCHANT_WEBHOOK_RETRY_INITIAL_SECONDS: '0.5',
      MERCHANT_WEBHOOK_RETRY_MAX_INTERVAL_SECONDS: '1',
      ...(bundle ? { WORKER_WORKFLOW_BUNDLE: bundle } : {}),
    });
    workers.push(w);
    await w.waitFor(/worker: polling task queue/, 120_000);
    return w;
  };
  const stopWorker = async (w: MpfProcess): Promise<void> => {
    await w.kill('SIGTERM');
    logs.push(w.output());
  };

  before(async () => {
    stack = await startStack({ noWorker: true, simulator: { swapExpiresInSeconds: 600 }, client: { swapSettleWaitSeconds: SETTLE_WAIT_SECONDS, linkLifetimeSeconds: 3600 } });
    // Links that expire at once and keep a day's grace for a late payment.
    shortLinks = new MpfClient({ client: stack.client, taskQueue: stack.taskQueue, keys: stack.keys, publicUrl: stack.notificationBaseUrl, linkLifetimeSeconds: 2, linkLateNotificationGraceSeconds: 3600 });
    patientSwaps = new MpfClient({ client: stack.client, taskQueue: stack.taskQueue, keys: stack.keys, publicUrl: stack.notificationBaseUrl, swapSettleWaitSeconds: DOUBT_SETTLE_WAIT_SECONDS });
    receiver = await startEventListener({ secrets: [secret], answer: () => (receiverUp ? 200 : 503) });
  });
  after(async () => {
    for (const w of workers) await w.kill('SIGKILL').catch(() => undefined);
    await receiver?.close();
    await stack?.stop();
  });

  // Every flow this test parks, by what it waits for (a flow's events workflow is `events-<its id>`).
  const parked: Record<string, { id: string; ref: string; end: string }> = {};
  /** The failed workflow tasks of every parked flow and events workflow, each with its cause and the worker log lines about it. */
  const failedTasksTold = async (): Promise<string[]> => {
    const ids = Object.values(parked).flatMap((p) => [p.id, `events-${p.id}`]);
    const failed: FailedTask[] = [];
    for (const id of ids) failed.push(...(await failedWorkflowTasks(stack, id)));
    return failed.map((f) => describeFailedTask(f, workers.map((w) => w.output())));
  };

  test(`flows parked at every wait on ${prev.release} end true on this release, with no nondeterminism`, { timeout: 300_000 }, async (t) => {
    try {
      await parkUpgradeAndDrive(t);
    } catch (err) {
      // Whatever failed, say what the workers failed at, if anything.
      for (const d of await failedTasksTold().catch((e: unknown) => [`(failed workflow tasks not read: ${String(e)})`])) t.diagnostic(d);
      throw err;
    }
  });

  async function parkUpgradeAndDrive(t: TestContext): Promise<void> {
    // The bundle is another release's workflows (0.1.0-0b68658's predate, e.g., the shared PIN budget's).
    const bundle = fs.readFileSync(path.join(prev.dir, 'workflow-bundle.js'), 'utf8');
    assert.ok(bundle.includes('swapWorkflow'), 'the bundle holds the workflows');
    assert.notEqual(prev.commit, execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(), 'the previous release is not this commit');
    const old = await startWorker(path.join(prev.dir, 'workflow-bundle.js'));
    assert.match(old.output(), /worker: workflows from the bundle .*workflow-bundle\.js/);
    const { mpf, control } = stack;
    const swapOf = async (name: string, extra: Record<string, unknown> = {}, starter: MpfClient = mpf) => {
      const ref = uniqueRef(`up${Object.keys(parked).length}`);
      const s = await starter.startSwap(swapBody(ref, extra));
      parked[name] = { id: s.swap.swap_id, ref, end: '' };
      return s;
    };

    // 1. A swap awaiting its PIN, with a webhook_url whose endpoint fails: its events' delivery retries.
    await swapOf('awaiting PIN, events retrying', { webhook_url: receiver.url });
    // 2. A swap awaiting its PIN after a wrong one.
    const wrong = await swapOf('awaiting PIN after a wrong PIN');
    assert.equal((await mpf.submitPin(wrong.swap.swap_id, { wallet_pin: '000000' }))!.outcome, 'pin_rejected');
    // 3. A swap whose confirmation answer was lost, left to reach needs_reconciliation.
    // (The provider applies the confirmation and the answer is lost; the retry is told the token is used.)
    const lostAnswer = { rules: [{ endpoint: 'swap.confirm' as const, kind: 'apply_then_fail' as const, times: 1 }], notifications: { delayMs: 600_000 } };
    await control.setFaults(lostAnswer);
    const recon = await swapOf('needs_reconciliation (swap)');
    await mpf.submitPin(recon.swap.swap_id, { wallet_pin: SIM_PIN }).catch(() => undefined);
    // 4. A link awaiting payment; 5. a link whose payment notification did not match (needs_reconciliation);
    // 6. a link expired, in its grace period for a late payment.
    const links: Record<string, { id: string; paymentRef: string; ref: string }> = {};
    for (const [name, client] of [['awaiting payment', mpf], ['needs_reconciliation (link)', mpf], ['expired, in grace', shortLinks]] as const) {
      const ref = uniqueRef('up-link');
      const l = await client.createLink(linkBody(ref));
      links[name] = { id: l.link.link_id, paymentRef: l.link.payment_ref!, ref };
      parked[name] = { id: l.link.link_id, ref, end: '' };
    }
    const mism = links['needs_reconciliation (link)']!;
    const n = { event: 'collection.completed', data: { payment_ref: mism.paymentRef, status: 'successful', notification_id: `mism-${mism.ref}`, amount: 1 } };
    await mpf.deliverNotification(mism.id, n, JSON.stringify(n));
    await eventually(async () => (await mpf.getSwap(recon.swap.swap_id)).state === 'needs_reconciliation', 60_000, 'the swap in needs_reconciliation').catch((e: unknown) => {
      t.diagnostic(old.output().split('\n').filter((l) => l.includes('swapConfirm') && !l.startsWith('    at')).slice(-3).join('\n'));
      throw e;
    });
    // 7. A confirmation in doubt waiting for the provider's notification, its settle wait outlasting the upgrade.
    const doubt = await swapOf('confirmation in doubt, awaiting the notification', {}, patientSwaps);
    await control.setFaults(lostAnswer);
    // By signal: the update's answer would wait for the settlement.
    await mpf.submitPin(doubt.swap.swap_id, { wallet_pin: SIM_PIN }, { wait: false });
    await control.waitForEffect((e) => e.kind === 'swap.confirmed', 15_000, { ref: parked['confirmation in doubt, awaiting the notification']!.ref });
    await eventually(async () => (await control.ledger({ ref: parked['confirmation in doubt, awaiting the notification']!.ref, endpoint: 'swap.confirm' })).requests.length >= 2, 15_000, 'the retried confirmation refused');
    await control.clearFaults();
    for (const [name, state] of [['needs_reconciliation (link)', 'needs_reconciliation'], ['expired, in grace', 'expired']] as const) {
      await eventually(async () => (await mpf.getLink(links[name]!.id)).state === state, 30_000, `${name}: ${state}`);
    }
    const states = await Promise.all(Object.entries(parked).map(async ([name, p]) => `${name}: ${(p.id.startsWith('swap-') ? await mpf.getSwap(p.id) : await mpf.getLink(p.id)).state}`));
    t.diagnostic(`parked on ${prev.release}: ${Object.keys(parked).length} flows — ${states.join('; ')}`);
    assert.equal((await mpf.getSwap(doubt.swap.swap_id)).state, 'confirming', 'the doubtful swap still waits for its notification');

    // The upgrade: the previous release's worker stops, this release's starts and the operator
    // makes it Current (its worker does not: the deployment has one). The old release's workflows
    // name no versioning behavior: AUTO_UPGRADE, so every parked flow moves to this release.
    assert.match(old.output(), new RegExp(`version ${deployment}/${prev.release} made Current`));
    await stopWorker(old);
    const current = await startWorker();
    assert.match(current.output(), /registered but NOT Current/);
    const buildId = /version \S+\/(\S+) registered but NOT Current/.exec(current.output())![1]!;
    await promoteVersion(stack, deployment, buildId);

    // Drive every flow to its end.
    receiverUp = true;
    const ok = parked['awaiting PIN, events retrying']!;
    assert.equal((await mpf.submitPin(ok.id, { wallet_pin: SIM_PIN }))!.outcome, 'confirmed');
    assert.equal((await mpf.submitPin(wrong.swap.swap_id, { wallet_pin: SIM_PIN }))!.outcome, 'confirmed');
    await control.notify((await mpf.getSwap(doubt.swap.swap_id)).payment_ref!, 'successful');
    await eventually(async () => (await mpf.getSwap(doubt.swap.swap_id)).state === 'confirmed', 30_000, 'the doubtful swap confirmed by its notification').catch(async (e: unknown) => {
      const view = await mpf.getSwap(doubt.swap.swap_id);
      const ledger = await control.ledger({ ref: parked['confirmation in doubt, awaiting the notification']!.ref });
      t.diagnostic(`the doubtful swap: ${view.state} (${view.execution ?? ''}); provider: ${ledger.effects.map((x) => `${x.at ?? ''} ${x.kind} ${JSON.stringify(x.details ?? {})}`).join('; ')}`);
      t.diagnostic(`its history: ${await historyTail(stack, doubt.swap.swap_id)}`);
      throw e;
    });
    await mpf.resolveFlow(recon.swap.swap_id, { outcome: 'confirmed', provider_reference: recon.swap.payment_ref!, operator: 'key upgrade-test', note: 'the provider shows the conversion' });
    await control.completeLink(links['awaiting payment']!.paymentRef);
    await eventually(async () => (await mpf.getLink(links['awaiting payment']!.id)).state === 'paid', 30_000, 'the link paid');
    await mpf.resolveFlow(mism.id, { outcome: 'failed', provider_reference: mism.paymentRef, operator: 'key upgrade-test', note: 'no such payment at the provider' });
    const late = links['expired, in grace']!;
    await control.completeLink(late.paymentRef);
    await eventually(async () => (await mpf.getLink(late.id)).state === 'needs_reconciliation', 30_000, 'the late payment recorded');
    await mpf.resolveFlow(late.id, { outcome: 'paid', provider_reference: late.paymentRef, operator: 'key upgrade-test', note: 'fulfilled the order' });
    await eventually(async () => (await mpf.getSwap(ok.id)).events?.some((e) => e.type === 'swap.confirmed' && e.deliveries?.some((d) => d.state === 'delivered')), 30_000, 'the events delivered');

    // Every flow's end, and the provider's ledger agrees.
    for (const p of Object.values(parked)) p.end = (p.id.startsWith('swap-') ? await mpf.getSwap(p.id) : await mpf.getLink(p.id)).state;
    t.diagnostic(`ended on this release: ${Object.entries(parked).map(([name, p]) => `${name} → ${p.end}`).join('; ')}`);
    assert.deepEqual(
      Object.fromEntries(Object.entries(parked).map(([name, p]) => [name, p.end])),
      {
        'awaiting PIN, events retrying': 'confirmed',
        'awaiting PIN after a wrong PIN': 'confirmed',
        'needs_reconciliation (swap)': 'reconciled',
        'awaiting payment': 'paid',
        'needs_reconciliation (link)': 'reconciled',
        'expired, in grace': 'reconciled',
        'confirmation in doubt, awaiting the notification': 'confirmed',
      },
    );
    const effects = async (ref: string, kind: string) => (await control.ledger({ ref })).effects.filter((e) => e.kind === kind).length;
    for (const name of ['awaiting PIN, events retrying', 'awaiting PIN after a wrong PIN', 'needs_reconciliation (swap)', 'confirmation in doubt, awaiting the notification']) {
      assert.equal(await effects(parked[name]!.ref, 'swap.confirmed'), 1, `${name}: converted once at the provider`);
    }
    assert.equal(await effects(links['awaiting payment']!.ref, 'link.paid'), 1);
    assert.equal(await effects(late.ref, 'link.paid'), 1);
    assert.equal(await effects(mism.ref, 'link.paid'), 0, 'the mismatched notification was not a payment at the provider');

    // No nondeterminism anywhere: worker logs, and no failed workflow task in any history.
    await stopWorker(current);
    const told = await failedTasksTold();
    const badLines = logs.join('\n').split('\n').filter((l) => NONDETERMINISM.test(l));
    t.diagnostic(`${Object.keys(parked).length} flows and their events workflows: ${told.length} failed workflow tasks; worker logs: ${badLines.length} nondeterminism lines`);
    for (const d of told) t.diagnostic(d);
    assert.deepEqual(told, [], 'no failed workflow task');
    assert.deepEqual(badLines, []);
  }
});

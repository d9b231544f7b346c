/**
 * Worker Deployment Versioning on real processes: two releases of `mpf worker` (build ids rel-a and
 * rel-b of one deployment), the operator promoting rel-b with the `temporal` CLI. Swaps are PINNED:
 * those started on rel-a finish on rel-a while new swaps go to rel-b, and rel-a is seen draining,
 * then drained. Links are AUTO_UPGRADE: a link parked on rel-a is paid on rel-b.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { type MpfProcess, spawnMpf } from '../helpers/processes';
import { eventually, startStack, type Stack, workerProcessEnv } from '../helpers/stack';
import { deploymentCli, promoteVersion } from '../helpers/versioning';

describe('releases as Worker Deployment Versions (mpf worker processes, temporal CLI)', () => {
  let stack: Stack;
  const workers: MpfProcess[] = [];
  const deployment = `mpf-versioning-${process.pid}-${Date.now().toString(36)}`;

  const startWorker = async (buildId: string): Promise<MpfProcess> => {
    const w = spawnMpf(['worker'], { ...workerProcessEnv(stack), LOG_LEVEL: 'info', WORKER_DEPLOYMENT_NAME: deployment, WORKER_BUILD_ID: buildId });
    workers.push(w);
    await w.waitFor(/worker: polling task queue/, 120_000);
    return w;
  };
  /** The build id a flow runs on, and its behavior, as Temporal records them. */
  const versionOf = async (id: string): Promise<{ buildId?: string; behavior?: string }> => {
    const d = await stack.client.workflow.getHandle(id).describe();
    const v = d.raw.workflowExecutionInfo?.versioningInfo;
    return { buildId: v?.deploymentVersion?.buildId ?? undefined, behavior: v?.behavior != null ? String(v.behavior) : undefined };
  };
  /** The build ids of the workers that completed each of a flow's workflow tasks. */
  const taskBuildIds = async (id: string): Promise<string[]> => {
    const h = await stack.client.workflow.getHandle(id).fetchHistory();
    return (h.events ?? []).flatMap((e) => (e.workflowTaskCompletedEventAttributes ? [e.workflowTaskCompletedEventAttributes.deploymentVersion?.buildId ?? '(none)'] : []));
  };
  const drainage = (buildId: string): string => {
    const out = JSON.parse(deploymentCli(stack, 'describe-version', '--deployment-name', deployment, '--build-id', buildId, '-o', 'json')) as Record<string, unknown>;
    return JSON.stringify(out);
  };

  before(async () => {
    stack = await startStack({ noWorker: true, simulator: { swapExpiresInSeconds: 600 }, client: { linkLifetimeSeconds: 3600 } });
  });
  after(async () => {
    for (const w of workers) await w.kill('SIGKILL').catch(() => undefined);
    await stack?.stop();
  });

  test('pinned swaps finish on the release that started them, new flows go to the promoted one, and the old release drains', { timeout: 240_000 }, async (t) => {
    const { mpf, control } = stack;
    // rel-a: the deployment's first version, made Current by its worker (WORKER_PROMOTE=if-none).
    const a = await startWorker('rel-a');
    assert.match(a.output(), new RegExp(`version ${deployment}/rel-a made Current`));
    const refs = { s1: uniqueRef('pin1'), s2: uniqueRef('pin2'), l1: uniqueRef('link1'), s3: uniqueRef('new') };
    const s1 = (await mpf.startSwap(swapBody(refs.s1))).swap.swap_id;
    const s2 = (await mpf.startSwap(swapBody(refs.s2))).swap.swap_id;
    const l1 = await mpf.createLink(linkBody(refs.l1));
    assert.deepEqual(await versionOf(s1), { buildId: 'rel-a', behavior: String(1) }, 'a swap is pinned to rel-a'); // VERSIONING_BEHAVIOR_PINNED = 1
    assert.equal((await versionOf(l1.link.link_id)).behavior, String(2), 'a link auto-upgrades'); // VERSIONING_BEHAVIOR_AUTO_UPGRADE = 2

    // rel-b starts beside it: registered, not Current, and says how to promote it.
    const b = await startWorker('rel-b');
    assert.match(b.output(), /registered but NOT Current .*temporal worker deployment set-current-version --deployment-name \S+ --build-id rel-b/);
    // The operator promotes rel-b, once the server has seen its pollers on every task queue of
    // rel-a (until then it refuses: "missing active task queues").
    await promoteVersion(stack, deployment, 'rel-b');
    const described = deploymentCli(stack, 'describe', '--name', deployment);
    t.diagnostic(`after the promotion:\n${described}`);
    assert.match(described, /CurrentVersionBuildID\s+rel-b\n/);

    // A new swap runs on rel-b; rel-a, with two pinned swaps open, is draining.
    const s3 = (await mpf.startSwap(swapBody(refs.s3))).swap.swap_id;
    assert.equal((await versionOf(s3)).buildId, 'rel-b');
    await eventually(async () => /draining/i.test(drainage('rel-a')), 30_000, 'rel-a draining');
    t.diagnostic(`rel-a while its swaps are open: ${drainage('rel-a')}`);

    // Every flow ends true; the pinned swaps on rel-a, the link (auto-upgrade) and the new swap on rel-b.
    assert.equal((await mpf.submitPin(s1, { wallet_pin: SIM_PIN }))!.outcome, 'confirmed');
    assert.equal((await mpf.submitPin(s3, { wallet_pin: SIM_PIN }))!.outcome, 'confirmed');
    await control.completeLink(l1.link.payment_ref!);
    await eventually(async () => (await mpf.getLink(l1.link.link_id)).state === 'paid', 30_000, 'the link paid');
    assert.ok(/draining/i.test(drainage('rel-a')), 'rel-a still drains while one pinned swap is open');
    assert.equal((await mpf.submitPin(s2, { wallet_pin: SIM_PIN }))!.outcome, 'confirmed');

    const ran = { s1: await taskBuildIds(s1), s2: await taskBuildIds(s2), s3: await taskBuildIds(s3), l1: await taskBuildIds(l1.link.link_id) };
    t.diagnostic(`workflow tasks by build id: ${JSON.stringify(ran)}`);
    assert.ok(ran.s1.length > 1 && ran.s1.every((b) => b === 'rel-a'), 'the first pinned swap ran wholly on rel-a');
    assert.ok(ran.s2.length > 1 && ran.s2.every((b) => b === 'rel-a'), 'the second pinned swap ran wholly on rel-a');
    assert.ok(ran.s3.every((b) => b === 'rel-b'), 'the new swap ran wholly on rel-b');
    assert.equal(ran.l1[0], 'rel-a', 'the link started on rel-a');
    assert.equal(ran.l1.at(-1), 'rel-b', 'and was paid on rel-b');
    for (const ref of [refs.s1, refs.s2, refs.s3]) {
      assert.equal((await control.ledger({ ref })).effects.filter((e) => e.kind === 'swap.confirmed').length, 1, `${ref}: converted once`);
    }
    assert.equal((await control.ledger({ ref: refs.l1 })).effects.filter((e) => e.kind === 'link.paid').length, 1);

    // With its last pinned swap closed, rel-a is drained: its workers may go.
    await eventually(async () => /drained/i.test(drainage('rel-a')), 60_000, 'rel-a drained');
    t.diagnostic(`rel-a once its swaps closed: ${drainage('rel-a')}`);
  });
});

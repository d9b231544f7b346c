/**
 * Releases have an identity: every worker registers as a version of a Temporal Worker Deployment
 * (Worker Deployment Versioning). The version is the deployment name plus a build id made of the
 * package version and the commit; `WORKER_DEPLOYMENT_NAME` / `WORKER_BUILD_ID` override them.
 *
 * A versioned worker receives no task until its version is the deployment's Current (or Ramping)
 * Version. `WORKER_PROMOTE` says what a starting worker does about it:
 *   - `if-none` (default): make its version Current only when the deployment has none (a first
 *     deployment, the demo, the tests, an upgrade from unversioned workers). A worker of a new
 *     release next to a running one waits for the operator's `temporal worker deployment
 *     set-current-version` (docs/operations/upgrading.md), so a release is promoted (or ramped) on
 *     purpose and the old version drains its pinned flows;
 *   - `always`: make its version Current at start (single-release topologies);
 *   - `never`: leave routing to the operator.
 * Which workflow types are PINNED and which AUTO_UPGRADE: src/workflows/versioning.ts.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { NativeConnection, WorkerDeploymentOptions } from '@temporalio/worker';
import { packageVersion } from '../config/version';
import { GrpcStatus as grpcStatus, hasGrpcCode as isCode } from './grpc-status';


export const DEFAULT_DEPLOYMENT_NAME = 'merchant-payment-flows';
export type PromotePolicy = 'if-none' | 'always' | 'never';

export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

export interface WorkerVersioning extends DeploymentVersion {
  promote: PromotePolicy;
}

const ROOT = path.resolve(__dirname, '..', '..');

let commitCache: string | undefined;
/** The commit this code is: MPF_COMMIT (the image's build argument) or the checkout's HEAD. */
export function releaseCommit(env: NodeJS.ProcessEnv = process.env): string {
  if (env.MPF_COMMIT) return env.MPF_COMMIT.slice(0, 7);
  if (commitCache === undefined) {
    try {
      commitCache = execFileSync('git', ['rev-parse', '--short=7', 'HEAD'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).toString().trim();
    } catch {
      commitCache = 'nocommit';
    }
  }
  return commitCache;
}

/** `<package version>-<commit>`, e.g. `0.1.0-659b819`: the build id of this release. */
export function releaseBuildId(env: NodeJS.ProcessEnv = process.env): string {
  return `${packageVersion()}-${releaseCommit(env)}`;
}

/** The SDK's deployment options of a versioned worker (AUTO_UPGRADE for types that name none). */
export function workerDeploymentOptions(v: DeploymentVersion): WorkerDeploymentOptions {
  return {
    version: { deploymentName: v.deploymentName, buildId: v.buildId },
    useWorkerVersioning: true,
    // Every type of ours names its behavior (src/workflows/versioning.ts); this default covers a
    // prebuilt bundle of a release from before versioning, whose types name none: they relied on
    // patches, which is what AUTO_UPGRADE does.
    defaultVersioningBehavior: 'AUTO_UPGRADE',
  };
}

/** The deployment's Current build id; undefined when the deployment (or its Current Version) does not exist yet. */
async function currentBuildId(connection: Pick<NativeConnection, 'workflowService'>, namespace: string, deploymentName: string): Promise<string | undefined> {
  try {
    const res = await connection.workflowService.describeWorkerDeployment({ namespace, deploymentName });
    return res.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId || undefined;
  } catch (e) {
    if (isCode(e, grpcStatus.NOT_FOUND)) return undefined;
    throw e;
  }
}

export type PromoteOutcome =
  | { kind: 'already-current' }
  | { kind: 'promoted'; previous?: string }
  | { kind: 'left'; current: string; reason: string };

/**
 * Applies the promote policy for this worker's version, before it polls: with `allowNoPollers` the
 * server accepts a version no worker has polled yet, so the worker's first poll already finds its
 * version Current and no task waits on an unrouted version.
 */
async function applyPromotePolicy(
  connection: Pick<NativeConnection, 'workflowService'>,
  namespace: string,
  v: WorkerVersioning,
  identity: string,
): Promise<PromoteOutcome> {
  const deadline = Date.now() + 30_000;
  for (let attempt = 0; ; attempt++) {
    try {
      const current = await currentBuildId(connection, namespace, v.deploymentName);
      if (current === v.buildId) return { kind: 'already-current' };
      if (v.promote === 'never') return { kind: 'left', current: current ?? '(none)', reason: 'WORKER_PROMOTE=never' };
      if (v.promote === 'if-none' && current) {
        return { kind: 'left', current, reason: 'the deployment has a Current Version (WORKER_PROMOTE=if-none)' };
      }
      await connection.workflowService.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName: v.deploymentName,
        buildId: v.buildId,
        identity,
        allowNoPollers: true,
      });
      return { kind: 'promoted', ...(current ? { previous: current } : {}) };
    } catch (e) {
      if (isCode(e, grpcStatus.UNIMPLEMENTED)) {
        throw new Error(`Worker Deployment Versioning is not available on this Temporal server (${(e as Error).message}): it needs Temporal 1.28 or later with system.enableDeploymentVersions on`, { cause: e });
      }
      // Two workers starting at once race on a new deployment (the loser sees a conflict or a
      // version still being created), and a server restarting is unavailable for a moment: try
      // again until the routing says who won, within 30 s.
      const retriable = isCode(e, grpcStatus.ABORTED, grpcStatus.FAILED_PRECONDITION, grpcStatus.NOT_FOUND, grpcStatus.UNAVAILABLE, grpcStatus.RESOURCE_EXHAUSTED, grpcStatus.ALREADY_EXISTS, grpcStatus.DEADLINE_EXCEEDED);
      if (!retriable || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, Math.min(1000, 100 * 2 ** attempt)));
    }
  }
}

/** One line for the worker's log: where this version stands after the policy. */
function describeOutcome(v: WorkerVersioning, outcome: PromoteOutcome): string {
  const name = `${v.deploymentName}/${v.buildId}`;
  switch (outcome.kind) {
    case 'already-current':
      return `worker: version ${name} is the Current Version of deployment ${v.deploymentName}`;
    case 'promoted':
      return `worker: version ${name} made Current (WORKER_PROMOTE=${v.promote}${outcome.previous ? `; was ${outcome.previous}` : ''})`;
    case 'left':
      return (
        `worker: version ${name} registered but NOT Current (${outcome.reason}; Current: ${outcome.current}): ` +
        `it gets no new flow until promoted: temporal worker deployment set-current-version --deployment-name ${v.deploymentName} --build-id ${v.buildId}`
      );
  }
}

/**
 * What a worker of version `v` needs before Worker.create: the promote policy applied (before its
 * first poll) and the SDK's deployment options; `line` says where the version stands, for the log.
 */
export async function versionWorker(
  connection: Pick<NativeConnection, 'workflowService'>,
  namespace: string,
  v: WorkerVersioning,
  identity: string,
): Promise<{ workerDeploymentOptions: WorkerDeploymentOptions; line: string }> {
  const outcome = await applyPromotePolicy(connection, namespace, v, identity);
  return { workerDeploymentOptions: workerDeploymentOptions(v), line: describeOutcome(v, outcome) };
}

/**
 * Replays the histories of flows on a live Temporal server against the workflow code of this
 * checkout, before that code is deployed: a change that would break a flow now running (a
 * nondeterminism error) fails here instead of in production. Reads TEMPORAL_ADDRESS /
 * TEMPORAL_NAMESPACE and PAYLOAD_ENCRYPTION_KEYS (or their _FILE forms) like the worker.
 *
 *   npx tsx scripts/replay-live.ts [--query '<visibility query>'] [--limit N] [--save DIR]
 *
 * Default query: the running swaps and payment links. --save writes each history as JSON (still
 * encrypted with your payload keys) — to keep as a replay fixture it must be re-recorded with the
 * test key (scripts/record-histories.ts), since tests never hold production keys.
 * Exit code 1 when any history fails to replay.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { loadEnv, requireKeys } from '../src/config/env';
import { FAILURE_CONVERTER_PATH, workerDataConverter } from '../src/codec/data-converter';
import { connectClient, temporalTargetFromEnv } from '../src/temporal/connection';
import { preloadWorkflowModules, WORKFLOWS_PATH } from '../src/worker';

const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      query: { type: 'string', default: 'WorkflowType IN ("swapWorkflow", "paymentLinkWorkflow") AND ExecutionStatus = "Running"' },
      limit: { type: 'string', default: '1000' },
      save: { type: 'string' },
    },
  });
  Runtime.install({ logger: new DefaultLogger('ERROR') }); // one line per history, not the replay workers' chatter
  const env = loadEnv();
  const keys = requireKeys(env);
  const client = await connectClient(temporalTargetFromEnv(env), keys);
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, preloadModules: preloadWorkflowModules(), failureConverterPath: FAILURE_CONVERTER_PATH, logger: quiet });
  const limit = Number(values.limit);
  let replayed = 0;
  let failed = 0;
  try {
    for await (const execution of client.workflow.list({ query: values.query })) {
      if (replayed >= limit) break;
      const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
      if (values.save) {
        fs.mkdirSync(values.save, { recursive: true });
        fs.writeFileSync(path.join(values.save, `${execution.workflowId}.json`), historyToJSON(history) + '\n', { mode: 0o600 });
      }
      replayed += 1;
      try {
        await Worker.runReplayHistory({ workflowBundle, dataConverter: workerDataConverter(keys), replayName: execution.workflowId }, history, execution.workflowId);
        console.log(`ok      ${execution.workflowId} (${execution.status.name}, ${history.events?.length ?? 0} events)`);
      } catch (err) {
        failed += 1;
        console.log(`FAILED  ${execution.workflowId}: ${(err as Error).message.split('\n')[0]}`);
      }
    }
  } finally {
    await client.connection.close();
  }
  console.log(`replay-live: ${replayed} histories, ${failed} failed (query: ${values.query})`);
  process.exitCode = failed > 0 ? 1 : 0;
}

main().catch((err: unknown) => {
  console.error(`replay-live: ${(err as Error).message}`);
  process.exitCode = 1;
});

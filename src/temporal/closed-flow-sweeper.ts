/**
 * The sweeper of flows closed from outside, run by every worker process: every `intervalMs` it
 * lists the swaps and payment links of its task queue that closed terminated, timed out, failed or
 * cancelled in Temporal (visibility, no history read), and carries each on in the same workflow
 * id's next run, `closedFlowWorkflow` (workflows/closed-flow.ts), which ends it truthfully and sends
 * the merchant its event. So a flow an operator terminates in Temporal Web ends `terminated` or
 * `needs_reconciliation` within about one interval (plus the visibility store's lag), with an
 * event, delivered like every other.
 *
 * Why here and not a Temporal Schedule: it needs only what a worker already may (list, describe,
 * query, start: the `write` role; a Schedule needs more), it runs wherever flows can run, and
 * every worker may sweep at once: the next run is started with the id-conflict policy FAIL, so two
 * sweepers carry a flow on once, and a flow already carried on (its latest run is newer) is skipped.
 *
 * The first sweep of a process looks back `lookbackMs` (default 7 days: flows closed while every
 * worker was down); later ones from the previous sweep's start less a margin for the visibility
 * store's lag. A flow that could not be carried on (no worker could answer its queries yet) is
 * tried again at the next sweep.
 */
import { type Client, WorkflowExecutionAlreadyStartedError, type WorkflowExecutionInfo } from '@temporalio/client';
import type { FlowEvent } from '../contract/merchant-events';
import {
  CLOSED_FLOW_WORKFLOW_TYPE,
  type ClosedFlowInput,
  EXECUTION_OF_STATUS,
  type FlowFacts,
  flowFactsQuery,
  type LastView,
} from '../workflows/closed-flows';
import { flowEventsQuery } from '../workflows/event-types';
import type { FlowKind } from '../workflows/flow-ids';
import { FLOW_KIND, FLOW_REF } from '../workflows/search-attributes';

export interface ClosedFlowSweeperOptions {
  client: Client;
  taskQueue: string;
  /** How often it sweeps (CLOSED_FLOW_SWEEP_SECONDS). */
  intervalMs: number;
  /** How far back the first sweep looks. */
  lookbackMs?: number;
  /** Told each flow carried on and each that could not be (one line each). */
  log?: (line: string) => void;
}

export const DEFAULT_LOOKBACK_MS = 7 * 24 * 3600_000;
/** The visibility store may show a closed execution this much later than it closed. */
const VISIBILITY_LAG_MS = 60_000;

export class ClosedFlowSweeper {
  /** Runs already carried on, or found carried on, by this process (no describe again). */
  private readonly done = new Set<string>();
  private since: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly o: ClosedFlowSweeperOptions) {}

  start(): void {
    const tick = (): void => {
      if (this.stopped) return;
      this.sweeping = this.sweepOnce()
        .then(() => undefined)
        .catch((err: unknown) => this.o.log?.(`closed flows: sweep failed, trying again in ${this.o.intervalMs / 1000} s (${String(err)})`))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.o.intervalMs).unref();
        });
    };
    tick();
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.sweeping;
  }

  /** One sweep; returns the flow ids it carried on. */
  async sweepOnce(): Promise<string[]> {
    const startedAt = Date.now();
    const from = this.since ?? startedAt - (this.o.lookbackMs ?? DEFAULT_LOOKBACK_MS);
    const carried: string[] = [];
    let retryFrom = Infinity;
    for await (const info of this.o.client.workflow.list({ query: this.query(from) })) {
      if (this.done.has(info.runId)) continue;
      try {
        if (await this.carryOn(info)) carried.push(info.workflowId);
        this.done.add(info.runId);
      } catch (err) {
        retryFrom = Math.min(retryFrom, info.closeTime?.getTime() ?? from);
        this.o.log?.(`closed flows: ${info.workflowId} (run ${info.runId}) not carried on yet, trying again at the next sweep (${String(err)})`);
      }
    }
    this.since = Math.min(startedAt - VISIBILITY_LAG_MS, retryFrom);
    return carried;
  }

  private query(fromMs: number): string {
    const tq = this.o.taskQueue.replace(/'/g, "\\'");
    return (
      `${FLOW_KIND.name} IN ('swap', 'payment_link') AND TaskQueue = '${tq}' AND ` +
      `ExecutionStatus IN ('Terminated', 'TimedOut', 'Failed', 'Canceled') AND CloseTime >= '${new Date(fromMs).toISOString()}'`
    );
  }

  /** Starts the flow's next run unless one exists; false when another run already carries it on. */
  private async carryOn(info: WorkflowExecutionInfo): Promise<boolean> {
    const latest = await this.o.client.workflow.getHandle(info.workflowId).describe();
    if (latest.runId !== info.runId) return false;
    const execution = EXECUTION_OF_STATUS[info.status.name];
    if (!execution) return false;
    const closed = this.o.client.workflow.getHandle(info.workflowId, info.runId);
    const [view, events, facts] = await Promise.all([
      closed.query<LastView>('state'),
      closed.query(flowEventsQuery).catch((): FlowEvent[] => []), // a flow from before merchant events
      closed.query(flowFactsQuery).catch((): FlowFacts | undefined => undefined), // a flow from before this
    ]);
    const input: ClosedFlowInput = {
      ...(facts ?? this.factsOf(info)),
      execution,
      closed_at: (info.closeTime ?? new Date()).toISOString(),
      closed_run_id: info.runId,
      view,
      events,
    };
    try {
      await this.o.client.workflow.start(CLOSED_FLOW_WORKFLOW_TYPE, {
        workflowId: info.workflowId,
        taskQueue: this.o.taskQueue,
        args: [input],
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        workflowIdConflictPolicy: 'FAIL',
        // The flow's token hashes (its notification URL and pin_token stay valid: money notified later still reaches it).
        ...(latest.memo ? { memo: latest.memo } : {}),
      });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return false; // another sweeper was first
      throw err;
    }
    this.o.log?.(`closed flows: ${info.workflowId} was ${execution} in Temporal while ${view.state}; carried on in its next run`);
    return true;
  }

  /** Kind and reference from the search attributes (a flow recorded before it answered its facts). */
  private factsOf(info: WorkflowExecutionInfo): FlowFacts {
    const kind = info.typedSearchAttributes.get(FLOW_KIND) as FlowKind | undefined;
    const ref = info.typedSearchAttributes.get(FLOW_REF);
    if (!kind || !ref) throw new Error('its kind and reference are not in its search attributes');
    return { kind, ref };
  }
}

/**
 * The wrong-PIN budget per user, kept in Temporal (workflows/pin-budget.ts) so that every gateway
 * counts against the same budget. The workflow id is `pin-budget-<HMAC(user_ref)>` under a key
 * derived (HKDF) from the active payload key: no user_ref in Temporal, in plaintext or as a plain
 * hash anyone could compute from a guessed user_ref. (A new active payload key starts fresh budgets.)
 */
import { createHmac, hkdfSync, randomUUID } from 'node:crypto';
import { type Client, WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { toKeyRing } from '../../codec/keys';
import { BUDGET_EXHAUSTED, PIN_BUDGET_WORKFLOW_TYPE, pinBudgetSettleUpdate, pinBudgetTakeUpdate } from '../../workflows/pin-budget';
import { isDeadlineExceeded, isTemporalUnavailable } from './temporal-errors';
import { TemporalPersistenceUnavailableError, TemporalUnavailableError, WorkerUnavailableError } from './errors';
import type { TemporalAvailability } from './health';

export const PIN_BUDGET_HKDF_INFO = 'mpf-pin-budget-v1';

export interface PinBudgetOptions {
  client: Client;
  taskQueue: string;
  keys: string;
  /** Wrong PINs per user in `timeWindowMs` (PINs in flight count until answered). */
  max: number;
  timeWindowMs: number;
  /**
   * Runs each call bounded by the client's TemporalGate (health.ts): Temporal or its persistence
   * down is TemporalUnavailableError within seconds, not a WorkerUnavailableError at the deadline.
   */
  guard?: <T>(fn: () => Promise<T>, flowId?: string) => Promise<T>;
  /** How long a call waits for a worker (default 2 s: the PIN waits behind it). */
  answerTimeoutMs?: number;
  /** Whether Temporal and its database answer (health.ts): a call cut by its deadline is then their outage, not a missing worker. */
  availability?: () => Promise<TemporalAvailability>;
}

/** A slot taken: settle it once the provider answered (wrong: kept; otherwise given back). */
export interface PinSlot {
  settle(wrong: boolean): Promise<void>;
}

export class SharedPinBudget {
  private readonly idKey: Buffer;

  constructor(private readonly opts: PinBudgetOptions) {
    const ring = toKeyRing(opts.keys);
    this.idKey = Buffer.from(hkdfSync('sha256', ring.keys.get(ring.activeKeyId)!, Buffer.alloc(0), PIN_BUDGET_HKDF_INFO, 32));
  }

  workflowId(userRef: string): string {
    return `pin-budget-${createHmac('sha256', this.idKey).update(userRef).digest('hex').slice(0, 40)}`;
  }

  /** A slot for one PIN of the user, or the seconds to wait when the budget is spent. */
  async take(userRef: string): Promise<{ slot: PinSlot } | { retryAfterSeconds: number }> {
    const workflowId = this.workflowId(userRef);
    const attemptId = randomUUID();
    const startWorkflowOperation = new WithStartWorkflowOperation(PIN_BUDGET_WORKFLOW_TYPE, {
      workflowId,
      taskQueue: this.opts.taskQueue,
      args: [{ max: this.opts.max, window_ms: this.opts.timeWindowMs }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    try {
      await this.within(workflowId, () => this.opts.client.workflow.executeUpdateWithStart(pinBudgetTakeUpdate, { args: [{ attempt_id: attemptId }], startWorkflowOperation }));
    } catch (err) {
      const m = err instanceof WorkflowUpdateFailedError ? new RegExp(`${BUDGET_EXHAUSTED}:(\\d+)`).exec(String((err.cause as Error | undefined)?.message)) : null;
      if (m) return { retryAfterSeconds: Number(m[1]) };
      throw err;
    }
    return {
      slot: {
        settle: (wrong) =>
          this.within(workflowId, () => this.opts.client.workflow.getHandle(workflowId).executeUpdate(pinBudgetSettleUpdate, { args: [{ attempt_id: attemptId, wrong }] })),
      },
    };
  }

  private async within<T>(workflowId: string, fn: () => Promise<T>): Promise<T> {
    const waitMs = this.opts.answerTimeoutMs ?? 2_000;
    const guard = this.opts.guard ?? (<R>(f: () => Promise<R>) => f());
    try {
      return await guard(() => this.opts.client.withDeadline(Date.now() + waitMs, fn));
    } catch (err) {
      if (err instanceof TemporalUnavailableError) throw err;
      if (isTemporalUnavailable(err)) throw new TemporalUnavailableError();
      if (isDeadlineExceeded(err) && this.opts.availability) {
        const a = await this.opts.availability();
        if (a === 'frontend_unavailable') throw new TemporalUnavailableError();
        if (a === 'persistence_unavailable') throw new TemporalPersistenceUnavailableError();
      }
      if (isDeadlineExceeded(err)) throw new WorkerUnavailableError('PIN budget', workflowId, waitMs, undefined);
      throw err;
    }
  }
}

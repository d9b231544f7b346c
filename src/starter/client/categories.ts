/** The provider's categories, flat and as a parent/child tree, through a short workflow. */
import { randomUUID } from 'node:crypto';
import { buildCategoryTree } from '../../contract/categories';
import { CATEGORIES_WORKFLOW_TYPE } from '../../workflows/messages';
import { WorkerUnavailableError } from './errors';
import type { TemporalGate } from './health';
import type { MpfClientOptions } from './options';
import type { CategoriesResult } from './views';
import type { CategoriesWorkflow } from './workflow-refs';

/**
 * The provider's categories, through a short workflow. Bounded: when no worker answers within
 * categoriesAnswerTimeoutMs the workflow is terminated and this throws WorkerUnavailableError.
 */
export async function listCategories(gate: TemporalGate, opts: Pick<MpfClientOptions, 'taskQueue' | 'categoriesAnswerTimeoutMs'>): Promise<CategoriesResult> {
  const workflowId = `categories-${randomUUID()}`;
  const waitMs = opts.categoriesAnswerTimeoutMs ?? 10_000;
  const handle = await gate.guard(() =>
    gate.temporal.workflow.start<CategoriesWorkflow>(CATEGORIES_WORKFLOW_TYPE, {
      workflowId,
      taskQueue: opts.taskQueue,
      workflowExecutionTimeout: '2 minutes',
    }),
  );
  const result = handle.result();
  result.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timed_out'>((resolve) => {
    timer = setTimeout(() => resolve('timed_out'), waitMs);
  });
  try {
    const categories = await gate.guard(() => Promise.race([result, timedOut]));
    if (categories === 'timed_out') {
      await handle.terminate('no worker answered the category list in time').catch(() => undefined);
      throw new WorkerUnavailableError('category list', workflowId, waitMs, undefined);
    }
    return { categories, tree: buildCategoryTree(categories) };
  } finally {
    clearTimeout(timer);
  }
}

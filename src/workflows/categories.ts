/** Fetches the provider's categories through the activity (the only code that calls the provider). */
import { proxyActivities } from '@temporalio/workflow';
import type { ProviderActivities } from '../activities/types';
import { PROVIDER_ACTIVITY_HEARTBEAT_TIMEOUT, PROVIDER_ACTIVITY_START_TO_CLOSE, providerRetryPolicy } from '../activities/retry-policies';
import type { Category } from '../contract/provider';

const { listCategories } = proxyActivities<ProviderActivities>({
  startToCloseTimeout: PROVIDER_ACTIVITY_START_TO_CLOSE,
  heartbeatTimeout: PROVIDER_ACTIVITY_HEARTBEAT_TIMEOUT,
  scheduleToCloseTimeout: '1 minute',
  retry: providerRetryPolicy,
});

export async function categoriesWorkflow(): Promise<Category[]> {
  return listCategories();
}

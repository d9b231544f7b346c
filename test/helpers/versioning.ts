/** The operator's side of Worker Deployment Versioning in tests: the `temporal` CLI, as the upgrade doc writes it. */
import { execFileSync } from 'node:child_process';
import { provisionTemporalCli } from '../../src/temporal/provision';
import { eventually } from './stack';

/** `temporal worker deployment …` against a test server; its standard output. */
export function deploymentCli(target: { address: string; namespace: string }, ...args: string[]): string {
  return execFileSync(provisionTemporalCli(), ['worker', 'deployment', ...args, '--address', target.address, '--namespace', target.namespace], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * `set-current-version … --yes`, repeated until the server accepts it: it refuses ("missing active
 * task queues") until it has seen the new version's pollers on every task queue of the current one.
 */
export async function promoteVersion(target: { address: string; namespace: string }, deploymentName: string, buildId: string): Promise<void> {
  await eventually(async () => {
    deploymentCli(target, 'set-current-version', '--deployment-name', deploymentName, '--build-id', buildId, '--yes');
    return true;
  }, 30_000, `${buildId} promoted`);
}

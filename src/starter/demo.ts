/**
 * `mpf demo`: brings up an embedded Temporal dev server (Web UI on, persistent SQLite under
 * .data/), and prints where Temporal Web is. Later issues add the simulator, worker, gateway and
 * both flows end to end.
 */
import path from 'node:path';
import { startDevServer } from '../temporal/dev-server';
import { PROJECT_ROOT } from '../temporal/provision';

export async function runDemo(opts: { once: boolean }): Promise<number> {
  const step = (msg: string) => console.log(`[demo] ${msg}`);
  step('provisioning and starting the Temporal dev server …');
  const server = await startDevServer({ ui: true, dbFile: path.join(PROJECT_ROOT, '.data', 'demo-temporal.db') });
  step(`Temporal server at ${server.address} (pid ${server.pid})`);
  step(`Temporal Web: ${server.uiUrl}/namespaces/${server.namespace}/workflows`);
  if (opts.once) {
    await server.stop();
    return 0;
  }
  step('press Ctrl-C to stop');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.stop();
  return 0;
}

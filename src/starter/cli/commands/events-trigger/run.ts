/**
 * `mpf events trigger <type>` when it runs: the session (gateway, simulator, references), the
 * type's recipe, the wait for the event in the flow's view, what it prints, and the simulator
 * left as it was found (also after a failure, a timeout or Ctrl-C).
 */
import { ConfigError } from '../../../../config/env';
import { gatewayTarget } from '../../face';
import { printJson } from '../../output';
import { runProviderRecipe } from './provider';
import { RECIPES } from './recipes';
import { TriggerSession, type TriggerOptions } from './session';

export interface RunOptions extends TriggerOptions {
  json?: boolean;
}

export async function runTrigger(type: string, opts: RunOptions): Promise<void> {
  const provider = type.startsWith('provider.');
  const recipe = RECIPES[type];
  if (!recipe && !provider) throw new Error(`${type}: no trigger for this event type yet`);
  const target = gatewayTarget();
  if (!target) {
    throw new ConfigError('MPF_GATEWAY_URL: is not set: mpf events trigger drives a real flow through the gateway (MPF_GATEWAY_URL, and an API key in MPF_API_KEY, MPF_API_KEY_FILE or --api-key-file)');
  }
  const say = opts.json ? () => undefined : (step: string) => process.stdout.write(`  ${step}\n`);
  const s = new TriggerSession(type, opts, target, say);
  if (!opts.json) process.stdout.write(`${type}: through the gateway at ${new URL(target.url).origin}\n`);
  const interrupt = (): void => s.stop.abort();
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    if (provider) {
      const seen = await runProviderRecipe(s, type);
      if (opts.json) printJson({ type, kind: 'provider', flow_id: seen.guardId, event_id: seen.event.id, event_timestamp: seen.event.timestamp, state: seen.state, steps: s.steps });
      else process.stdout.write(`${type}: emitted ${seen.event.id} by ${seen.guardId}; the worker delivers it to its MERCHANT_WEBHOOK_URL and to the webhook endpoints that take it (mpf webhooks list)\n`);
      return;
    }
    const d = await recipe!(s);
    const { event, view } = await s.waitForEvent(d.kind, d.flowId, type, d.wait);
    if (opts.json) {
      printJson({ type, kind: d.kind, flow_id: d.flowId, event_id: event.id, event_timestamp: event.timestamp, state: view.state, steps: s.steps });
    } else {
      process.stdout.write(`${type}: emitted ${event.id} by ${d.flowId} (now ${view.state}); the worker delivers it to its MERCHANT_WEBHOOK_URL and to the webhook endpoints that take it (mpf webhooks list)\n`);
    }
  } catch (err) {
    if (s.stop.signal.aborted) throw new Error(`${type}: interrupted (the flow goes on; the simulator changes are undone)`, { cause: err });
    throw err;
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    await s.finish();
  }
}

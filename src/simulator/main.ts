/**
 * Standalone simulator: runSimulatorCli() starts it, prints
 *   listening on http://127.0.0.1:PORT
 *   checkout on http://127.0.0.1:PORT2
 * and stops on SIGINT/SIGTERM. `mpf simulator` calls it; `tsx src/simulator/main.ts --port 0`
 * runs it directly.
 */
import { parseArgs } from 'node:util';
import { type RunningSimulator, type SimulatorOptions, startSimulator } from './index';

export interface SimulatorCliOptions extends SimulatorOptions {
  port: number;
  checkoutPort?: number;
  /** Where the two lines go (default: process.stdout). */
  write?: (line: string) => void;
}

export interface RunningSimulatorCli extends RunningSimulator {
  /** Resolves once a signal (or close()) has stopped the simulator. */
  stopped: Promise<void>;
}

export async function runSimulatorCli(opts: SimulatorCliOptions): Promise<RunningSimulatorCli> {
  const { write = (l: string) => process.stdout.write(`${l}\n`), ...simOpts } = opts;
  const sim = await startSimulator(simOpts);
  let resolveStopped: () => void = () => undefined;
  const stopped = new Promise<void>((r) => (resolveStopped = r));
  const stop = async (): Promise<void> => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await sim.close();
    resolveStopped();
  };
  const onSignal = (): void => void stop();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  if (simOpts.stateFile) {
    write(sim.restored ? `state restored from ${simOpts.stateFile}: ${sim.restored.swaps} swap(s), ${sim.restored.links} link(s)` : `state kept in ${simOpts.stateFile} (new)`);
  }
  write(`listening on ${sim.baseUrl}`);
  write(`checkout on ${sim.checkoutUrl}`);
  return { ...sim, close: stop, stopped };
}

function int(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer`);
  return n;
}

if (require.main === module) {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      'checkout-port': { type: 'string' },
      host: { type: 'string' },
      seed: { type: 'string' },
      'swap-expires-in-seconds': { type: 'string' },
    },
  });
  runSimulatorCli({
    port: int('port', values.port) ?? 0,
    checkoutPort: int('checkout-port', values['checkout-port']),
    host: values.host,
    seed: int('seed', values.seed),
    swapExpiresInSeconds: int('swap-expires-in-seconds', values['swap-expires-in-seconds']),
  }).catch((e: Error) => {
    process.stderr.write(`simulator: ${e.message}\n`);
    process.exitCode = 1;
  });
}

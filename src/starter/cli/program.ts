/**
 * The `mpf` program: only assembles the commands. Each command module builds its own commander
 * Command, owns its options, and loads what its action needs only when it runs (a worker loads no
 * gateway, `mpf --help` no Temporal client).
 */
import { Command, Option } from 'commander';
import { packageVersion } from '../../config/version';
import { setCredentialFlags, type CredentialKind } from './credentials';
import { clusterCommand } from './commands/cluster';
import { keysCommand } from './commands/keys';
import { categoriesCommand } from './commands/categories';
import { codecWebEndpointCommand } from './commands/codec';
import { demoCommand } from './commands/demo';
import { eventsCommand } from './commands/events';
import { gatewayCommand } from './commands/gateway';
import { linkCommand } from './commands/link';
import { liveCommand } from './commands/live';
import { providerCommand } from './commands/provider';
import { webhooksCommand } from './commands/webhooks';
import { reconcileCommand } from './commands/reconcile';
import { simCommand } from './commands/sim';
import { simulatorCommand } from './commands/simulator';
import { swapCommand } from './commands/swap';
import { webCommand } from './commands/web';
import { workerCommand } from './commands/worker';
// Every command that reads the environment checks the merchant-event variables by the feature's rules.
import '../../merchant-events/env';

export function buildProgram(): Command {
  return new Command('mpf')
    .description('Merchant payment flows on Temporal: swaps, payment links, categories')
    .version(packageVersion(), '-V, --version', "print mpf's version")
    .option('--api-key-file <path>', 'the API key of the commands that go through a gateway (MPF_GATEWAY_URL); wins over MPF_API_KEY, MPF_API_KEY_FILE and MPF_ACCESS_TOKEN')
    .addOption(
      new Option('--as <credential>', "which credential of the environment the gateway's operator routes (mpf reconcile, mpf provider) get when it holds both a person's access token (MPF_ACCESS_TOKEN) and an API key (MPF_API_KEY); without it, both are refused").choices(['person', 'key']),
    )
    .hook('preAction', (program) => setCredentialFlags(program.opts() as { apiKeyFile?: string; as?: CredentialKind }))
    .showSuggestionAfterError(true)
    .addCommand(workerCommand())
    .addCommand(gatewayCommand())
    .addCommand(simulatorCommand())
    .addCommand(swapCommand())
    .addCommand(linkCommand())
    .addCommand(reconcileCommand())
    .addCommand(categoriesCommand())
    .addCommand(codecWebEndpointCommand())
    .addCommand(webCommand())
    .addCommand(demoCommand())
    .addCommand(eventsCommand())
    .addCommand(simCommand())
    .addCommand(keysCommand())
    .addCommand(providerCommand())
    .addCommand(webhooksCommand())
    .addCommand(liveCommand())
    .addCommand(clusterCommand());
}

/** `mpf provider pause|resume|status`: the deployment's kill switch and breaker (to be built). */
import { Command } from 'commander';

export function providerCommand(): Command {
  return new Command('provider').description("the provider guard: pause and resume money-moving calls; the breaker's state");
}

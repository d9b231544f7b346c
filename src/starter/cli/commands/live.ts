/** `mpf live check`: the preflight before going live (to be built). */
import { Command } from 'commander';

export function liveCommand(): Command {
  return new Command('live').description('going live: a read-only preflight against the live provider');
}

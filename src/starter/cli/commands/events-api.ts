/** `mpf events list|show|redeliver`: the gateway's events API from the terminal (to be built). */
import type { Command } from 'commander';

/** Adds `list`, `show` and `redeliver` to `mpf events`. */
export function addEventsApiCommands(_events: Command): void {}

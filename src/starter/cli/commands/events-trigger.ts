/** `mpf events trigger <type>`: drives a real flow to the point where it emits that event (to be built). */
import type { Command } from 'commander';

/** Adds `trigger` to `mpf events`. */
export function addTriggerCommand(_events: Command): void {}

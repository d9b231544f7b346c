/**
 * One clear line for every error the CLI can meet (main() prefixes `mpf: `). Bad input names the
 * command-line option; configuration errors name the variable; nothing echoes a secret.
 */
import { ConfigError } from '../../config/env';
import { DuplicateFlowError, FlowNotFoundError, InputError, PinNotAcceptedError } from '../client/errors';

/** Contract field -> the option that sets it, where the two names differ. */
const OPTION_OF_FIELD: Record<string, string> = {
  from_currency: '--from',
  to_currency: '--to',
  wallet_pin: 'the PIN',
};

function optionOfField(field: string): string {
  const top = field.split('.')[0] ?? field;
  return OPTION_OF_FIELD[top] ?? `--${top.replace(/_/g, '-')}`;
}

export function formatCliError(err: unknown): string {
  if (err instanceof InputError) {
    return err.field ? `invalid ${optionOfField(err.field)} (${err.message})` : `invalid input (${err.message})`;
  }
  if (err instanceof ConfigError) return err.message;
  if (err instanceof DuplicateFlowError || err instanceof FlowNotFoundError || err instanceof PinNotAcceptedError) {
    return err.message;
  }
  if (err instanceof Error) {
    const text = err.message.split('\n')[0] ?? err.name;
    return text || err.name;
  }
  return String(err);
}

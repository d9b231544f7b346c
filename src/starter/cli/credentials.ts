/**
 * The one rule for the credentials `mpf` sends to a gateway, and where each came from.
 *
 *  - A credential named on the command line wins: `mpf --api-key-file <path>` is the API key,
 *    whatever the environment holds (a person's token included). It is visible in the command, so
 *    it is what the user meant for this command.
 *  - From the environment a command takes exactly one credential. A shell cannot tell
 *    `MPF_API_KEY_FILE=x mpf …` from an exported variable, so none of them may silently win over
 *    another: two of them that could both be sent are refused, exit 2, naming both sources and how
 *    to pick one (`mpf --as key|person …`, `unset …`, or `--api-key-file`). Nothing is sent.
 *      - the operator routes (`mpf reconcile`, `mpf provider`) take a person's access token
 *        (MPF_ACCESS_TOKEN or MPF_ACCESS_TOKEN_FILE) or an API key (MPF_API_KEY or
 *        MPF_API_KEY_FILE): both present is refused unless `--as` picks one;
 *      - the backend routes (`mpf swap|link|categories|events`) take an API key only, so a
 *        person's token beside it is not looked at;
 *      - NAME and NAME_FILE both set is refused too (two values for one credential).
 *  - Every message names the credential's source (`MPF_API_KEY_FILE=/path`, `--api-key-file
 *    /path`, `MPF_API_KEY`, `MPF_ACCESS_TOKEN`, …), never its value.
 */
import { looksLikeJwt } from '../../auth/person-tokens';
import { AmbiguousSettingError, cliCredentialSetting } from '../../config/cli-env';
import { ConfigError } from '../../config/env';
import { readOptionFile } from './options';

/** `--as`: which kind of credential to take from the environment when it holds both. */
export type CredentialKind = 'key' | 'person';

/** A credential and where it came from (`source`: for messages, never the value). */
export interface Credential {
  kind: CredentialKind;
  value: string;
  source: string;
}

/** Two credentials where the command takes one, or `--as` naming one that is not there: exit 2, nothing sent. */
export class CredentialChoiceError extends AmbiguousSettingError {
  override name = 'CredentialChoiceError';
}

let flags: { apiKeyFile?: string; as?: CredentialKind } = {};

/** `mpf --api-key-file <path>` and `mpf --as key|person` (the program's preAction hook sets them). */
export function setCredentialFlags(f: { apiKeyFile?: string; as?: CredentialKind }): void {
  flags = { ...f };
}

/** The API key in the environment (MPF_API_KEY or MPF_API_KEY_FILE), with its source. */
function keyFromEnvironment(): Credential | undefined {
  const k = cliCredentialSetting('MPF_API_KEY');
  return k && { kind: 'key', value: k.value, source: k.from };
}

/** The API key named on the command line (`--api-key-file`), if any. */
function keyFromFlag(): Credential | undefined {
  if (!flags.apiKeyFile) return undefined;
  return { kind: 'key', value: readOptionFile('--api-key-file', flags.apiKeyFile), source: `--api-key-file ${flags.apiKeyFile}` };
}

/** A person's access token from the environment; a value that is not one says to sign in or unset it. */
function personFromEnvironment(): Credential | undefined {
  const t = cliCredentialSetting('MPF_ACCESS_TOKEN');
  if (!t) return undefined;
  if (!looksLikeJwt(t.value)) {
    throw new ConfigError(`${t.from}: is not a person's access token (a JWT from the identity provider): sign in first (mpf cluster login, or your identity provider's CLI) or unset it; an API key goes in MPF_API_KEY or MPF_API_KEY_FILE`);
  }
  return { kind: 'person', value: t.value, source: t.from };
}

/**
 * The API key of the backend routes: `--api-key-file`, else MPF_API_KEY or MPF_API_KEY_FILE.
 * A person's token is not looked at (these routes take none); `--as person` is refused.
 */
export function apiKeyCredential(): Credential | undefined {
  if (flags.as === 'person') {
    throw new CredentialChoiceError("--as person: this command's gateway routes take an API key only (MPF_API_KEY, MPF_API_KEY_FILE or --api-key-file), never a person's access token; nothing was sent");
  }
  return keyFromFlag() ?? keyFromEnvironment();
}

/**
 * The credential of the gateway's operator routes (/v1/admin/*), by the module's rule:
 * `--api-key-file`; else the one credential of the environment (`--as` picks when it holds both).
 */
export function operatorCredential(): Credential | undefined {
  const flag = keyFromFlag();
  if (flag) {
    if (flags.as === 'person') throw new CredentialChoiceError(`--as person and ${flag.source}: the command line names an API key and asks for a person's access token; give one of them; nothing was sent`);
    return flag;
  }
  if (flags.as === 'key') {
    const key = keyFromEnvironment();
    if (!key) throw new CredentialChoiceError('--as key: no API key is set (MPF_API_KEY, MPF_API_KEY_FILE or --api-key-file); nothing was sent');
    return key;
  }
  if (flags.as === 'person') {
    const person = personFromEnvironment();
    if (!person) throw new CredentialChoiceError("--as person: no person's access token is set (MPF_ACCESS_TOKEN or MPF_ACCESS_TOKEN_FILE: mpf cluster login); nothing was sent");
    return person;
  }
  const person = personFromEnvironment();
  const key = keyFromEnvironment();
  if (person && key) {
    throw new CredentialChoiceError(
      `two credentials for the gateway's operator routes: ${person.source} (a person's access token) and ${key.source} (an API key); nothing was sent. ` +
        `Pick one: mpf --as person … or mpf --as key … (or unset ${person.source.split('=')[0]} or ${key.source.split('=')[0]}; or name the key on the command line: mpf --api-key-file <path> …)`,
    );
  }
  return person ?? key;
}

/** Whether any credential is given at all (the command line's key, or either in the environment), before a command reads anything. */
export function credentialGiven(): boolean {
  return Boolean(flags.apiKeyFile) || cliCredentialSetting('MPF_API_KEY') !== undefined || cliCredentialSetting('MPF_ACCESS_TOKEN') !== undefined;
}

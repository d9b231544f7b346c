/**
 * docker-compose.yml's one-shot `admin-token` job: the admin tools' access token (client
 * credentials of `mpf-admin-tools`, as `mpf cluster up` fetches it for its namespace job), written
 * 0600 to the file named by its argument for the `temporal-namespace` job (TEMPORAL_API_KEY). The
 * switch MPF_CLUSTER_AUTH is read as `mpf cluster up` reads it (tools/cluster/topology.ts,
 * authSwitchOn): unset, empty or 1, on (the default); 0, off: it removes that file and writes
 * nothing, and the namespace job calls with its certificate alone; any other value stops the job
 * naming the setting (and the namespace job, which waits for it, never runs). Run as
 *   node --require tsx/cjs docker/admin-token.ts /run/admin-token/token
 * with TEMPORAL_OIDC_ISSUER, TEMPORAL_OIDC_CLIENT_ID, TEMPORAL_OIDC_CLIENT_SECRET_FILE and
 * TEMPORAL_OIDC_AUDIENCE (src/temporal/tokens.ts reads them, as the workers' and gateways' do).
 */
import fs from 'node:fs';
import { renewingToken, tokenSettingsFromEnv } from '../src/temporal/tokens';
import { authSwitchOn } from '../tools/cluster/topology';

/**
 * Writes the token to `out` (0600) with the switch on; removes `out` and writes nothing with it off.
 * Returns whether it wrote one; throws (no token either) for a switch that is neither 0 nor 1.
 */
export async function writeAdminToken(out: string, env: NodeJS.ProcessEnv = process.env, log: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): Promise<boolean> {
  if (!out) throw new Error('usage: admin-token.ts <token file>');
  fs.rmSync(out, { force: true });
  if (!authSwitchOn(env)) {
    log('admin-token: MPF_CLUSTER_AUTH=0: no token (the Temporal API authorises no call)');
    return false;
  }
  const read = (name: string) => env[name] ?? (env[`${name}_FILE`] ? fs.readFileSync(env[`${name}_FILE`] as string, 'utf8').trim() : undefined);
  const settings = tokenSettingsFromEnv({
    TEMPORAL_OIDC_ISSUER: read('TEMPORAL_OIDC_ISSUER'),
    TEMPORAL_OIDC_CLIENT_ID: read('TEMPORAL_OIDC_CLIENT_ID'),
    TEMPORAL_OIDC_CLIENT_SECRET: read('TEMPORAL_OIDC_CLIENT_SECRET'),
    TEMPORAL_OIDC_AUDIENCE: read('TEMPORAL_OIDC_AUDIENCE'),
  });
  if (!settings) throw new Error('TEMPORAL_OIDC_ISSUER: not set');
  const token = await renewingToken(settings);
  token.stop();
  fs.writeFileSync(out, `${token.current()}\n`, { mode: 0o600 });
  log(`admin-token: a token for ${settings.clientId}, valid until ${new Date(token.expiresAt()).toISOString()}`);
  return true;
}

if (require.main === module) {
  writeAdminToken(process.argv[2] ?? '').catch((e: unknown) => {
    process.stderr.write(`admin-token: ${(e as Error).message}\n`);
    process.exit(1);
  });
}

/**
 * The gateway hands the provider a notification_url and users a pin_url. Listening on a public
 * interface while those URLs say 127.0.0.1 means no notification will ever arrive and no PIN page
 * opens: refused under NODE_ENV=production, a loud warning otherwise.
 */
import { ConfigError, isLoopbackUrl, isProduction, type AppEnv } from '../../config/env';

export function isLoopbackHost(host: string): boolean {
  return isLoopbackUrl(`http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}/`);
}

/**
 * Returns a warning to print (or undefined); throws a ConfigError when production must refuse.
 * Only loopback *notification* URLs are refused: no payment notification could ever arrive. A
 * loopback pin_url is only warned about: it is right where the browser runs on the same machine
 * (compose's published port, http://localhost:8080).
 */
export function checkPublicAddresses(host: string, env: Pick<AppEnv, 'GATEWAY_PUBLIC_URL' | 'GATEWAY_NOTIFICATION_BASE_URL' | 'NODE_ENV'>): string | undefined {
  if (isLoopbackHost(host)) return undefined;
  const notificationBase = env.GATEWAY_NOTIFICATION_BASE_URL ?? env.GATEWAY_PUBLIC_URL;
  const advice =
    'Set GATEWAY_PUBLIC_URL (and GATEWAY_NOTIFICATION_BASE_URL if the provider reaches the gateway by another address) to the address clients and the provider use';
  if (!notificationBase || isLoopbackUrl(notificationBase)) {
    const text =
      `the gateway listens on ${host}, a non-loopback interface, but GATEWAY_NOTIFICATION_BASE_URL / GATEWAY_PUBLIC_URL: ` +
      `${notificationBase ? `is the loopback address ${notificationBase}` : 'is not set'}, so the provider would be handed notification_url on a loopback address and no payment notification would ever arrive. ${advice}`;
    if (isProduction(env)) throw new ConfigError(`${text} (refused under NODE_ENV=production)`);
    return `WARNING: ${text}`;
  }
  if (!env.GATEWAY_PUBLIC_URL || isLoopbackUrl(env.GATEWAY_PUBLIC_URL)) {
    return `WARNING: the gateway listens on ${host}, a non-loopback interface, but GATEWAY_PUBLIC_URL: ${env.GATEWAY_PUBLIC_URL ? `is the loopback address ${env.GATEWAY_PUBLIC_URL}` : 'is not set'}, so pin_url opens only in a browser on this machine. ${advice}`;
  }
  return undefined;
}

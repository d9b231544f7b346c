/**
 * Signing people in through the deployment's identity provider: OpenID Connect's authorization
 * code flow with PKCE (openid-client), as the public client GATEWAY_CONSOLE_CLIENT_ID (default
 * `mpf-console`), redirected back to `<GATEWAY_PUBLIC_URL>/console/callback`. The access token it
 * gets is the one the API verifies (people's tokens, GATEWAY_OIDC_*); the console keeps it in its
 * server-side session. Each sign-in's state and PKCE verifier are kept here for ten minutes and
 * tied to the browser by a cookie holding the state.
 */
import type * as OpenIdClientNs from 'openid-client' with { 'resolution-mode': 'import' };

type OpenIdClient = typeof OpenIdClientNs;
const PENDING_MS = 10 * 60_000;
const MAX_PENDING = 10_000;

export interface OidcSignInOptions {
  issuer: string;
  clientId: string;
  /** The gateway's public base URL, read when a sign-in starts (it is known once the gateway listens). */
  publicUrl: () => string;
}

export class OidcSignIn {
  private oidc?: Promise<OpenIdClient>;
  private config?: Promise<OpenIdClientNs.Configuration>;
  private readonly pending = new Map<string, { verifier: string; expiresAt: number }>();

  constructor(private readonly o: OidcSignInOptions) {}

  get redirectUri(): string {
    return `${this.o.publicUrl().replace(/\/+$/, '')}/console/callback`;
  }

  private load(): Promise<OpenIdClient> {
    return (this.oidc ??= import('openid-client') as Promise<OpenIdClient>);
  }

  private discover(): Promise<OpenIdClientNs.Configuration> {
    const pending = (this.config ??= this.load().then((oidc) => {
      const issuer = new URL(this.o.issuer);
      return oidc.discovery(issuer, this.o.clientId, undefined, oidc.None(), issuer.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests], timeout: 5 } : { timeout: 5 });
    }));
    pending.catch(() => {
      if (this.config === pending) this.config = undefined;
    });
    return pending;
  }

  /** Where to send the browser, and the state its cookie must carry back. */
  async start(): Promise<{ url: string; state: string }> {
    const [oidc, config] = await Promise.all([this.load(), this.discover()]);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const now = Date.now();
    for (const [k, v] of this.pending) if (v.expiresAt <= now) this.pending.delete(k);
    while (this.pending.size >= MAX_PENDING) this.pending.delete(this.pending.keys().next().value!);
    this.pending.set(state, { verifier, expiresAt: now + PENDING_MS });
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri,
      scope: 'openid profile email',
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    return { url: url.href, state };
  }

  /**
   * The access token for the callback `url` (the IdP's redirect), when its state is the one
   * `cookieState` names and still pending. Throws an Error whose message names the step (never a
   * token).
   */
  async finish(url: URL, cookieState: string | undefined): Promise<{ accessToken: string; expiresAt: number; name?: string }> {
    const state = url.searchParams.get('state') ?? '';
    const entry = this.pending.get(state);
    this.pending.delete(state);
    if (!entry || entry.expiresAt <= Date.now() || !cookieState || cookieState !== state) {
      throw new Error('this sign-in was not started here, was already used, or took over ten minutes: start again');
    }
    const [oidc, config] = await Promise.all([this.load(), this.discover()]);
    const tokens = await oidc.authorizationCodeGrant(config, url, { pkceCodeVerifier: entry.verifier, expectedState: state }, { redirect_uri: this.redirectUri });
    // The ID token's name, for the page's header only (what the API records comes from the access token).
    const name = tokens.claims()?.name;
    return { accessToken: tokens.access_token, expiresAt: Date.now() + (tokens.expiresIn() ?? 300) * 1000, ...(typeof name === 'string' && name ? { name: name.slice(0, 60) } : {}) };
  }
}

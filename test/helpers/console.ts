/**
 * A person's browser at the console, without a browser: real HTTP to the gateway, its cookies kept
 * as a browser keeps them (path /console, httpOnly included), redirects followed by hand, and the
 * CSRF token read from each page's forms as a browser submits it.
 */
import { request } from 'undici';

export interface ConsolePage {
  status: number;
  /** The path the last redirect led to (or the one asked for). */
  path: string;
  /** How many redirects were followed to reach it. */
  redirects: number;
  html: string;
  headers: Record<string, string | string[] | undefined>;
}

export class ConsoleBrowser {
  readonly jar = new Map<string, string>();
  /** The CSRF token of the last page that had a form. */
  csrf = '';

  constructor(readonly baseUrl: string) {}

  private cookieHeader(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private keep(setCookie: string | string[] | undefined): void {
    for (const c of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i).trim();
      const value = pair!.slice(i + 1);
      if (value === '' || /max-age=0|expires=Thu, 01 Jan 1970/i.test(c)) this.jar.delete(name);
      else this.jar.set(name, value);
    }
  }

  /** One request, then every redirect followed with GET (as a browser does after a 303). */
  async go(method: 'GET' | 'POST', path: string, form?: Record<string, string>): Promise<ConsolePage> {
    let url = new URL(path, this.baseUrl);
    let body = form ? new URLSearchParams(form).toString() : undefined;
    let m = method;
    for (let hop = 0; hop < 10; hop++) {
      const res = await request(url, {
        method: m,
        headers: { cookie: this.cookieHeader(), ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
        ...(body !== undefined ? { body } : {}),
      });
      this.keep(res.headers['set-cookie']);
      const location = res.headers.location;
      if (res.statusCode >= 300 && res.statusCode < 400 && typeof location === 'string') {
        await res.body.text();
        url = new URL(location, url);
        m = 'GET';
        body = undefined;
        continue;
      }
      const html = await res.body.text();
      const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
      if (token) this.csrf = token;
      return { status: res.statusCode, path: `${url.pathname}${url.search}`, redirects: hop, html, headers: res.headers };
    }
    throw new Error(`more than 10 redirects from ${path}`);
  }

  get(path: string): Promise<ConsolePage> {
    return this.go('GET', path);
  }

  /** A form posted with the page's CSRF token (unless `csrf: false`). */
  post(path: string, form: Record<string, string> = {}, opts: { csrf?: boolean } = {}): Promise<ConsolePage> {
    return this.go('POST', path, opts.csrf === false ? form : { _csrf: this.csrf, ...form });
  }
}

/** The page's text without tags (for assertions on what a person reads). */
export const textOf = (html: string): string => html.replace(/<[^>]+>/g, ' ').replace(/&#39;/g, "'").replace(/&quot;/g, '"').replace(/&amp;/g, '&').replace(/\s+/g, ' ');

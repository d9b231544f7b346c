/**
 * The console's sessions, kept in the gateway's memory: the browser holds only an opaque id (an
 * httpOnly, SameSite=Lax cookie); the person's access token stays here and goes only to the
 * gateway's own API (app.inject). A session ends when its token expires, when the person signs
 * out, or when the gateway restarts (sign in again). Bounded: the oldest sessions are dropped
 * past `max`.
 */
import { randomBytes } from 'node:crypto';
import type { ConsoleRole } from './roles';

export interface ConsoleSession {
  id: string;
  /** The person's access token (a JWT the API verifies); never sent to the browser, never logged. */
  accessToken: string;
  /** ms since the epoch: the token's expiry. */
  expiresAt: number;
  subject: string;
  name: string;
  role: ConsoleRole;
}

export class SessionStore {
  private readonly sessions = new Map<string, ConsoleSession>();
  constructor(private readonly max = 10_000) {}

  create(s: Omit<ConsoleSession, 'id'>): ConsoleSession {
    const session = { ...s, id: randomBytes(32).toString('base64url') };
    this.sessions.set(session.id, session);
    while (this.sessions.size > this.max) this.sessions.delete(this.sessions.keys().next().value!);
    return session;
  }

  /** The live session of `id`, or undefined (unknown, or its token expired: then forgotten). */
  get(id: string | undefined): ConsoleSession | undefined {
    if (!id) return undefined;
    const s = this.sessions.get(id);
    if (s && s.expiresAt <= Date.now()) {
      this.sessions.delete(id);
      return undefined;
    }
    return s;
  }

  end(id: string | undefined): void {
    if (id) this.sessions.delete(id);
  }
}

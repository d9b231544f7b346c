/**
 * The provider client's admission gate: at most `size` calls hold a connection at once, the others
 * wait here in arrival order. The client gives its undici Pool as many connections (and one spare,
 * for the moment a failed one is still closing) and dispatches on it only through this gate, so a
 * call that passes the gate finds a connection free and is sent at once: it no longer waits inside
 * the Pool. What is asked of a call (the provider guard's admission) is asked after the gate, at
 * the moment the call can go out.
 *
 * Hand-written (a FIFO counting semaphore in a few lines) because a permit must be kept until the
 * response is read to its end, and a wait must end when the caller's AbortSignal fires (an activity
 * cancelled or timed out while it waited sends nothing); no dependency of ours offers both.
 */

/** Gives the permit back; a second call is a no-op. */
export type ReleasePermit = () => void;

interface Waiter {
  grant(release: ReleasePermit): void;
}

export class ConnectionGate {
  private free: number;
  private readonly waiters: Waiter[] = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError('a connection gate needs a size of at least 1');
    this.free = size;
  }

  /** Calls waiting for a permit now. */
  get waiting(): number {
    return this.waiters.length;
  }

  /**
   * A permit, once one is free (first come, first served). Rejects with the signal's reason when
   * `signal` aborts first; the caller then holds nothing.
   */
  acquire(signal?: AbortSignal): Promise<ReleasePermit> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.free > 0) {
      this.free -= 1;
      return Promise.resolve(this.permit());
    }
    return new Promise<ReleasePermit>((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(abortReason(signal!));
      };
      const waiter: Waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      this.waiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private permit(): ReleasePermit {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next.grant(this.permit()); // handed over: the count of free permits is unchanged
      else this.free += 1;
    };
  }
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('the wait for a provider connection was aborted');
}

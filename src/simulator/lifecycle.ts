/**
 * Timers the simulator owns (latency, hangs, notification retries), so that reset() and close()
 * cancel every one of them and nothing keeps the process alive after close.
 */
export class Lifecycle {
  private timers = new Map<NodeJS.Timeout, () => void>();
  closed = false;

  /** Resolves true after `ms`, or false at once if cancelled (by `signal`, cancelAll or close). */
  sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.closed || signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = (): void => {
        clearTimeout(t);
        this.timers.delete(t);
        resolve(false);
      };
      const t = setTimeout(() => {
        this.timers.delete(t);
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      }, ms);
      this.timers.set(t, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(false);
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Cancels every pending sleep (they resolve false). */
  cancelAll(): void {
    const pending = [...this.timers];
    this.timers.clear();
    for (const [t, cancel] of pending) {
      clearTimeout(t);
      cancel();
    }
  }

  close(): void {
    this.closed = true;
    this.cancelAll();
  }
}

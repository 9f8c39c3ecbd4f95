/**
 * The process' bound on delivery attempts in flight (WEBHOOK_CONCURRENCY), shared by every
 * running job. A job takes the permits for all its attempts before it starts any (at most the
 * whole capacity), first come first served, so once started its attempts run side by side and
 * it ends within about one attempt's timeout: the relay's stale bound counts from that start.
 */
export class AttemptLimiter {
  private available: number;
  private readonly waiting: { permits: number; grant: () => void }[] = [];

  constructor(readonly capacity: number) {
    this.available = capacity;
  }

  /** Resolves once `wanted` permits (capped at the capacity) are held; call the result to give them back. */
  async acquire(wanted: number): Promise<() => void> {
    const permits = Math.max(1, Math.min(wanted, this.capacity));
    if (this.waiting.length === 0 && this.available >= permits) {
      this.available -= permits;
    } else {
      await new Promise<void>((grant) => this.waiting.push({ permits, grant }));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.available += permits;
      this.grantWaiting();
    };
  }

  get inUse(): number {
    return this.capacity - this.available;
  }

  private grantWaiting(): void {
    // In order: a large job first in line is not starved by small ones behind it.
    while (this.waiting.length > 0 && this.available >= this.waiting[0].permits) {
      const next = this.waiting.shift();
      if (!next) return;
      this.available -= next.permits;
      next.grant();
    }
  }
}

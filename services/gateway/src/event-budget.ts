import { RateLimitedError } from "./errors.js";

interface Window {
  startedAt: number;
  spent: number;
}

/**
 * The tracking rate limit, which counts events rather than requests (contract section 5a): a
 * batch of 100 spends 100. Fixed one-minute windows per key, as the management API's limiter
 * keeps them, and per gateway replica like it. Keys are forgotten oldest first beyond `maxKeys`.
 */
export class EventBudget {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly perMinute: number,
    private readonly options: { windowMs?: number; maxKeys?: number; now?: () => number } = {},
  ) {}

  /**
   * Spends `events` from the key's budget of the current window, or throws RateLimitedError (and
   * spends nothing more) when they do not fit.
   */
  spend(key: string, events: number): void {
    const windowMs = this.options.windowMs ?? 60_000;
    const now = (this.options.now ?? Date.now)();
    let window = this.windows.get(key);
    if (!window || window.startedAt + windowMs <= now) {
      window = { startedAt: now, spent: 0 };
      this.windows.delete(key);
      if (this.windows.size >= (this.options.maxKeys ?? 10_000)) {
        const oldest = this.windows.keys().next().value;
        if (oldest !== undefined) this.windows.delete(oldest);
      }
      this.windows.set(key, window);
    }
    if (window.spent + events > this.perMinute) {
      throw new RateLimitedError(Math.max(1, Math.ceil((window.startedAt + windowMs - now) / 1000)));
    }
    window.spent += events;
  }
}

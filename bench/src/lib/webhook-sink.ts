import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One webhook attempt as the receiver saw it. */
export interface SinkArrival {
  path: string;
  /** Wall-clock ms (Date.now()) when the request's headers arrived: the attempt reached the receiver. */
  at: number;
  webhookId: string;
  body: string;
}

/**
 * The merchant's receiver for the webhook bench: an HTTP server in the bench process that answers
 * every request 200 at once and records when each arrived. It runs in the load generator's
 * process, so its CPU is counted as the load generator's.
 */
export class WebhookSink {
  private arrivals: SinkArrival[] = [];
  private waiters: { count: number; resolve: () => void }[] = [];
  private server: Server | undefined;
  private port = 0;

  /**
   * `keepBodies: false` records every arrival without its body: a long run receives hundreds of
   * thousands, and holding their bodies would grow the load generator by hundreds of MB.
   */
  constructor(private readonly options: { keepBodies?: boolean } = {}) {}

  async start(): Promise<this> {
    this.server = createServer({ keepAliveTimeout: 5000 }, (req, res) => {
      const at = Date.now();
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/plain" }).end("ok");
        this.arrivals.push({
          path: req.url ?? "/",
          at,
          webhookId: String(req.headers["webhook-id"] ?? ""),
          body: this.options.keepBodies === false ? "" : Buffer.concat(chunks).toString("utf8"),
        });
        this.waiters = this.waiters.filter((waiter) => {
          if (this.arrivals.length < waiter.count) return true;
          waiter.resolve();
          return false;
        });
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  get count(): number {
    return this.arrivals.length;
  }

  /** Everything received since the last reset (bodies empty when not kept). */
  received(): readonly SinkArrival[] {
    return this.arrivals;
  }

  reset(): void {
    this.arrivals = [];
  }

  /** Resolves true once `count` attempts have arrived since the last reset, false after `timeoutMs`. */
  waitFor(count: number, timeoutMs: number): Promise<boolean> {
    if (this.arrivals.length >= count) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter !== entry);
        resolve(false);
      }, timeoutMs);
      const entry = {
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      this.waiters.push(entry);
    });
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

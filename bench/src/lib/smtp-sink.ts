import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

const messageIdPattern = /^Message-ID:\s*<([^>]*)>/im;

/**
 * The mail server for the bench: an SMTP server in the bench process (smtp-server, as the
 * notifier's tests use) that accepts every message and remembers its Message-ID, which the
 * notifier sets to `<email id@affiliate-notifier>`: enough to tell a message sent twice. Like
 * the webhook sink it runs in the load generator's process.
 */
export class SmtpSink {
  private readonly ids: string[] = [];
  private readonly server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    onData: (stream, _session, callback) => {
      let head = "";
      stream.on("data", (chunk: Buffer) => {
        // The headers come first; the body is not needed.
        if (head.length < 8192) head += chunk.toString("utf8");
      });
      stream.on("end", () => {
        this.ids.push(messageIdPattern.exec(head)?.[1] ?? "");
        callback();
      });
    },
  });
  private port = 0;

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.server.address() as AddressInfo).port;
    return this;
  }

  /** SMTP_URL for the notifier. */
  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  /** The Message-ID of every message received, in arrival order ("" for one without). */
  messageIds(): readonly string[] {
    return this.ids;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

/** A message the sink received: its recipients and its text, every MIME part decoded. */
export interface ReceivedMail {
  to: string[];
  text: string;
}

/**
 * A local SMTP server that keeps what it is sent: the notifier's real SMTP path, read by a test
 * instead of a person. No authentication, loopback only.
 */
export class MailSink {
  readonly messages: ReceivedMail[] = [];
  readonly #server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData: (stream, session, callback) => {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        this.messages.push({
          to: session.envelope.rcptTo.map((recipient) => recipient.address.toLowerCase()),
          text: decodeMime(Buffer.concat(chunks).toString("utf8")),
        });
        callback();
      });
    },
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    return `smtp://127.0.0.1:${(this.#server.server.address() as AddressInfo).port}`;
  }

  to(address: string): ReceivedMail[] {
    return this.messages.filter((message) => message.to.includes(address.toLowerCase()));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

/** The headers and body of one MIME entity. */
function splitEntity(raw: string): { headers: string; body: string } {
  const end = raw.search(/\r?\n\r?\n/);
  if (end === -1) return { headers: raw, body: "" };
  return { headers: raw.slice(0, end), body: raw.slice(end).replace(/^\r?\n\r?\n/, "") };
}

/** A message's text: its leaves decoded (quoted-printable, base64) and joined, multipart or not. */
export function decodeMime(raw: string): string {
  const { headers, body } = splitEntity(raw);
  const unfolded = headers.replace(/\r?\n[ \t]+/g, " ");
  const boundary = /content-type:\s*multipart\/[^;]+;.*?boundary="?([^";\r\n]+)"?/i.exec(unfolded)?.[1];
  if (boundary) {
    return body
      .split(`--${boundary}`)
      .slice(1)
      .filter((part) => !part.startsWith("--"))
      .map((part) => decodeMime(part.replace(/^\r?\n/, "")))
      .join("\n");
  }
  const encoding = /content-transfer-encoding:\s*([\w-]+)/i.exec(unfolded)?.[1]?.toLowerCase();
  if (encoding === "base64") return Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
  if (encoding === "quoted-printable") {
    const bytes = body
      .replace(/=\r?\n/g, "")
      .replace(/=([0-9A-F]{2})/gi, (_match, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
    return Buffer.from(bytes, "latin1").toString("utf8");
  }
  return body;
}

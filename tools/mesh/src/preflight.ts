import { connect as natsConnect } from "nats";
import postgres from "postgres";

/** The URL without its password, fit for a message. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return url;
  }
}

const reason = (error: unknown) =>
  (error as { code?: string }).code ?? (error instanceof Error ? error.message.split("\n")[0] : String(error));

/**
 * Checks that Postgres and NATS answer before anything starts, so a missing server is one clear
 * line within seconds, not a stack trace from a service.
 */
export async function preflight(databaseUrl: string, natsUrl: string): Promise<string | undefined> {
  const sql = postgres(databaseUrl, { max: 1, connect_timeout: 4, onnotice: () => {} });
  try {
    await sql`select 1`;
  } catch (error) {
    return `cannot reach Postgres at ${redactUrl(databaseUrl)} (${reason(error)}); start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => undefined);
  }
  try {
    const nc = await natsConnect({ servers: natsUrl, timeout: 4000, reconnect: false });
    try {
      await (await nc.jetstreamManager()).getAccountInfo();
    } catch {
      return `NATS at ${redactUrl(natsUrl)} answers but JetStream is not enabled; start nats-server with -js`;
    } finally {
      await nc.close();
    }
  } catch (error) {
    return `cannot reach NATS at ${redactUrl(natsUrl)} (${reason(error)}); start it with: start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server`;
  }
  return undefined;
}

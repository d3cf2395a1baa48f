import { connect } from "nats";
import { runId } from "./database.js";
import { defaultNatsUrl } from "./infrastructure.js";

export interface TestNamespace {
  /** EVENTS_NAMESPACE for this run: its streams and subjects are invisible to other runs. */
  namespace: string;
  /** Deletes the run's streams. */
  cleanup(): Promise<void>;
}

export function createTestNamespace(natsUrl = process.env.NATS_URL ?? defaultNatsUrl): TestNamespace {
  const namespace = runId("t");
  return {
    namespace,
    async cleanup() {
      const nc = await connect({ servers: natsUrl });
      try {
        const jsm = await nc.jetstreamManager();
        const prefix = `${namespace.toUpperCase()}_`;
        for await (const stream of jsm.streams.list()) {
          if (stream.config.name.startsWith(prefix)) await jsm.streams.delete(stream.config.name);
        }
      } finally {
        await nc.close();
      }
    },
  };
}

import { createServer } from "node:net";

/**
 * Ports and processes as the end-to-end and cluster tests handle them: one set of handed-out
 * ports per test process, so a mesh and the clusters it runs against never share one.
 */

const handedOut = new Set<number>();

/** Whether a port can be bound on loopback right now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * A port that was free a moment ago, chosen below the kernel's ephemeral range (32768 and up on
 * Linux). A port the kernel gave out for `listen(0)` is an ephemeral one, and between this check
 * and the server's own bind an outgoing connection (to Postgres, say) may take it as its source
 * port; below that range only a listener can.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (handedOut.has(port) || !(await bindable(port))) continue;
    handedOut.add(port);
    return port;
  }
}

/** Whether the process `pid` still exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** kill -9 of a process, as a crash; resolves once it is gone (its ports are free). */
export async function killAndWait(pid: number): Promise<void> {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    return;
  }
  while (alive(pid)) await new Promise((resolve) => setTimeout(resolve, 20));
}

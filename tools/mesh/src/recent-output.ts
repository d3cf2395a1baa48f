import type { ChildProcess } from "node:child_process";

/** How many lines are kept: enough for the failure of any one service. */
const keptLines = 500;

/** The last lines the services and the supervisor printed (with output "pipe"), for diagnostics. */
export class RecentOutput {
  private readonly lines: string[] = [];

  add(text: string): void {
    this.lines.push(...text.split("\n").filter(Boolean));
    this.lines.splice(0, Math.max(0, this.lines.length - keptLines));
  }

  /** Keeps what a child process writes to its piped stdout and stderr. */
  collect(child: ChildProcess): void {
    for (const stream of [child.stdout, child.stderr]) {
      stream?.on("data", (chunk: Buffer) => this.add(chunk.toString("utf8")));
    }
  }

  /** The last `count` lines (all kept lines by default), oldest first. */
  last(count = keptLines): string[] {
    return this.lines.slice(-count);
  }
}

import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Sql } from "postgres";

/**
 * What a run's figures are figures of (issue 28: a figure names the commit of main it was
 * measured on). A tree with uncommitted changes is no commit: its figures carry `commit: null`
 * and say so, whatever HEAD is.
 */
export interface Provenance {
  /** The commit measured, or null when the tree differs from every commit (dirty, or no git). */
  commit: string | null;
  /** HEAD, even when the tree is dirty: what the changes were made on. */
  head: string | null;
  branch: string | null;
  /** Tracked files changed, and untracked files outside the ignored ones (`git status --porcelain`). */
  changedFiles: string[];
  /** The database server's `autovacuum` setting: production runs it on; without it the soak fails. */
  autovacuum: string;
  /** One line for the report. */
  label: string;
}

const repositoryRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

function git(args: string[]): string | null {
  try {
    return execFileSync("git", args, { cwd: repositoryRoot, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .trimEnd();
  } catch {
    return null;
  }
}

/** The tree's commit and state, and the server's autovacuum setting. */
export async function readProvenance(sql: Sql): Promise<Provenance> {
  const head = git(["rev-parse", "HEAD"]);
  const branch = git(["rev-parse", "--abbrev-ref", "HEAD"]);
  const status = git(["status", "--porcelain", "--untracked-files=normal"]);
  const changedFiles = (status ?? "")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => line.slice(3));
  const clean = head !== null && status !== null && changedFiles.length === 0;
  const [setting] = await sql<{ autovacuum: string }[]>`select current_setting('autovacuum') as autovacuum`;
  const autovacuum = setting?.autovacuum ?? "unknown";
  const short = head?.slice(0, 7) ?? "no git";
  const state = clean
    ? `commit ${short} (${branch ?? "detached"}), clean tree`
    : head === null
      ? "no git commit found: these figures name no commit"
      : `NOT a commit's figures: ${changedFiles.length} uncommitted change(s) on ${short} (${branch ?? "detached"})`;
  const vacuum =
    autovacuum === "on"
      ? "autovacuum on"
      : `autovacuum ${autovacuum} (production runs it on; the soak and long runs degrade without it)`;
  return { commit: clean ? head : null, head, branch, changedFiles, autovacuum, label: `${state}; ${vacuum}` };
}

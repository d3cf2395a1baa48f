import { DomainError, type Sql } from "@affiliate/platform";
import { outbox } from "../events/outbox.js";
import { getProgramOrThrow, updateProgram as storeProgramChanges } from "../store/programs.js";
import { programChangeErrors } from "./rules.js";
import type { Program, ProgramChanges } from "./types.js";

/** Applies the given setting changes; they govern commissions created from now on. */
export async function updateProgram(sql: Sql, productId: string, changes: ProgramChanges): Promise<Program> {
  const errors = programChangeErrors(changes);
  if (Object.keys(errors).length > 0) throw new DomainError("invalid_argument", "Validation failed", errors);
  return sql.begin(async (tx) => {
    const current = await getProgramOrThrow(tx, productId);
    await storeProgramChanges(tx, current.productId, changes);
    const program = await getProgramOrThrow(tx, productId);
    await outbox.programUpdated(tx, program);
    return program;
  });
}

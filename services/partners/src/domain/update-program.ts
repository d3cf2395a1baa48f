import { DomainError, type FieldErrors, type Sql } from "@affiliate/platform";
import { outbox } from "../events/outbox.js";
import { getProgramOrThrow, updateProgram as storeProgramChanges } from "../store/programs.js";
import { programChangeErrors, programErrors } from "./rules.js";
import type { Program, ProgramChanges } from "./types.js";

const throwIfAny = (errors: FieldErrors) => {
  if (Object.keys(errors).length > 0) throw new DomainError("invalid_argument", "Validation failed", errors);
};

/**
 * Applies the given setting changes; they govern commissions of payments recorded from now on.
 * Each value is checked alone first, then the settings they leave together (a flat program needs
 * an amount), with the program locked so two concurrent changes cannot each pass alone and fail
 * together; a refused change changes nothing.
 */
export async function updateProgram(sql: Sql, productId: string, changes: ProgramChanges): Promise<Program> {
  throwIfAny(programChangeErrors(changes));
  return sql.begin(async (tx) => {
    const current = await getProgramOrThrow(tx, productId, true);
    const defined = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
    throwIfAny(programErrors({ ...current, ...defined }));
    await storeProgramChanges(tx, current.productId, changes);
    const program = await getProgramOrThrow(tx, productId);
    await outbox.programUpdated(tx, program);
    return program;
  });
}

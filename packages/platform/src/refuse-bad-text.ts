import { badTextMessage, isCleanText } from "@affiliate/contract-rules";
import { FieldViolationsSchema } from "@affiliate/proto/common";
import { create, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
import {
  isReflectList,
  isReflectMap,
  isReflectMessage,
  type ReflectMessage,
  reflect,
} from "@bufbuild/protobuf/reflect";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/** A string field of a message whose text is bad, by its path (`registrations[2].name`). */
export interface BadTextField {
  path: string;
}

function join(prefix: string, name: string): string {
  return prefix === "" ? name : `${prefix}.${name}`;
}

function badTextIn(message: ReflectMessage, prefix: string, found: BadTextField[]): void {
  for (const field of message.fields) {
    if (!message.isSet(field)) continue;
    const path = join(prefix, field.name);
    visitField(message, field, path, found);
  }
}

function visitValue(value: unknown, path: string, found: BadTextField[]): void {
  if (typeof value === "string") {
    if (!isCleanText(value)) found.push({ path });
  } else if (isReflectMessage(value)) {
    badTextIn(value, path, found);
  }
}

function visitField(message: ReflectMessage, field: DescField, path: string, found: BadTextField[]): void {
  const value = message.get(field);
  if (isReflectList(value)) {
    let index = 0;
    for (const item of value) visitValue(item, `${path}[${index++}]`, found);
  } else if (isReflectMap(value)) {
    for (const [key, item] of value) {
      // A map key is part of the data too (e.g. ErrorInfo's details).
      if (typeof key === "string" && !isCleanText(key)) found.push({ path: `${path}[${JSON.stringify(key)}]` });
      visitValue(item, `${path}[${String(key)}]`, found);
    }
  } else {
    visitValue(value, path, found);
  }
}

/**
 * Every string in `message` (nested messages, lists and map keys and values included) that is
 * not clean text, by its proto field path. Walks the message by reflection, so a field added to
 * any proto is covered without code.
 */
export function badTextFields<Desc extends DescMessage>(schema: Desc, message: Message): BadTextField[] {
  const found: BadTextField[] = [];
  badTextIn(reflect(schema, message as never), "", found);
  return found;
}

/** INVALID_ARGUMENT naming each field whose text is bad, as the gateway's envelope shows it. */
function badTextError(fields: BadTextField[]): ConnectError {
  const violations = create(FieldViolationsSchema, {
    fieldViolations: fields.map(({ path }) => ({ field: path, description: badTextMessage })),
  });
  return new ConnectError("Validation failed", Code.InvalidArgument, undefined, [
    { desc: FieldViolationsSchema, value: violations },
  ]);
}

function assertCleanText(schema: DescMessage, message: Message): void {
  const fields = badTextFields(schema, message);
  if (fields.length > 0) throw badTextError(fields);
}

/**
 * Server interceptor: refuses a request message carrying bad text in any string field with
 * INVALID_ARGUMENT and a FieldViolations detail naming the fields, before a handler runs. Every
 * service deploys alone, so each refuses bad text itself instead of trusting the gateway to; a
 * handler never hands Postgres a string it cannot store (which would be a 500).
 */
export const refuseBadText: Interceptor = (next) => async (req) => {
  if (!req.stream) {
    assertCleanText(req.method.input, req.message);
    return next(req);
  }
  const messages = req.message;
  async function* checked() {
    for await (const message of messages) {
      assertCleanText(req.method.input, message);
      yield message;
    }
  }
  return next({ ...req, message: checked() });
};

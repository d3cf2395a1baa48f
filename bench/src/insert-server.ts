/**
 * Reference server for section E: one Fastify route doing one postgres.js INSERT per request
 * (pool 10) into a scratch table. It is the floor of what recording a tracking event can cost
 * in one process, so POST /events through the mesh is compared against it. Run by the bench as
 * `node --import tsx --import @affiliate/platform/instrumentation src/insert-server.ts`.
 */
import fastify from "fastify";
import postgres from "postgres";
import { uuidv7 } from "uuidv7";

const databaseUrl = process.env.DATABASE_URL;
const table = process.env.SCRATCH_TABLE;
if (!databaseUrl || !table) throw new Error("DATABASE_URL and SCRATCH_TABLE are required");

const sql = postgres(databaseUrl, { max: 10, onnotice: () => {} });
const app = fastify();

interface EventBody {
  type?: string;
  referral_code?: string;
  amount_cents?: number;
  external_id?: string;
}

app.get("/healthz", async () => ({ status: "ok" }));
app.post<{ Body: EventBody }>("/events", async (request, reply) => {
  const body = request.body;
  const id = `evt_${uuidv7().replaceAll("-", "")}`;
  await sql`
    insert into ${sql(table)} (id, event_type, referral_code, amount_cents, external_id)
    values (${id}, ${body.type ?? "click"}, ${body.referral_code ?? null}, ${body.amount_cents ?? null},
            ${body.external_id ?? null})`;
  return reply.code(201).send({ data: { id, type: body.type } });
});

await app.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1" });
process.once("SIGTERM", () => {
  void app
    .close()
    .then(() => sql.end({ timeout: 2 }))
    .then(() => process.exit(0));
});

/** Every size and duration the bench uses; each can be overridden by a BENCH_* variable. */
export interface BenchConfig {
  sections: Set<SectionName>;
  /** A: partnerships seeded into one product. */
  partnerships: number;
  /** A: the page number of the "deep" page (1-based; page 1 is the first). */
  pageDepth: number;
  /** A, F: sequential requests per measured URL. */
  samples: number;
  /** A: autocannon run per list URL, in seconds (0 skips it). */
  listDurationS: number;
  /** B, E, G, J, R: autocannon run per case, in seconds. */
  durationS: number;
  /** B, E, R: concurrent connections. */
  connections: number;
  /** B, E, G and A's load part: cases alternate over this many rounds of durationS / rounds each. */
  rounds: number;
  /** Each load case is preceded by an unrecorded run of this length, so JIT and pools are warm. */
  warmupS: number;
  /** C: how many bulk registrations of 100 entries. */
  bulkRepeats: number;
  /** F: events of the large product over the last 12 months, and today; events of the small one. */
  events: number;
  eventsToday: number;
  smallEvents: number;
  /** G: live payments seeded for the refunds to use up, one per request (warm-up included). */
  refundPayments: number;
  /** H: active partnerships holding the approved commissions, and those commissions. */
  payoutPartnerships: number;
  payoutCommissions: number;
  /** I: tracking events of the customer erased (and as many of other customers). */
  erasureEvents: number;
  /** J: deliveries drained per throughput case (1 endpoint, 100 endpoints), split over the rounds. */
  webhookDeliveries: number;
  /** J: payments per second offered for the commit-to-first-attempt latency, for BENCH_DURATION_S. */
  webhookRate: number;
  /** R: partnerships of the read product, and the events spread over them and the last 12 months (plus `eventsToday`). */
  readPartnerships: number;
  readEvents: number;
  /** R: which cases run (all by default); one case alone is for profiling a read. */
  readCases: ("insert" | "list" | "stats")[];
  /** K: Stripe events per second offered for the receipt-to-commission latency, for BENCH_DURATION_S. */
  stripeRate: number;
  /** S: minutes of mixed load, and the requests per second offered throughout (open loop). */
  soakMinutes: number;
  soakRate: number;
  /**
   * S: vacuum and analyze as autovacuum would when the server runs without it (BENCH_SOAK_AUTOVACUUM=off
   * measures the database as this machine leaves it, never vacuumed).
   */
  soakAutovacuum: boolean;
}

export const sectionNames = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "R", "S"] as const;
export type SectionName = (typeof sectionNames)[number];
/**
 * Sections run only when BENCH_SECTIONS names them: the soak (S) takes ten minutes by itself and
 * wants a mesh that no other section has filled, since it measures how the figures drift.
 */
const optInSections: readonly SectionName[] = ["S"];

function onOff(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw === "on") return true;
  if (raw === "off") return false;
  throw new Error(`${name} must be on or off, not ${raw}`);
}

function positiveInt(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw.replaceAll("_", ""));
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return value;
}

function sectionsOf(raw: string | undefined): Set<SectionName> {
  if (!raw) return new Set(sectionNames.filter((name) => !optInSections.includes(name)));
  const wanted = raw
    .split(",")
    .map((s) => s.trim().toUpperCase())
    .filter(Boolean);
  const unknown = wanted.filter((s) => !(sectionNames as readonly string[]).includes(s));
  if (unknown.length > 0) throw new Error(`BENCH_SECTIONS: unknown section(s) ${unknown.join(", ")}`);
  return new Set(wanted as SectionName[]);
}

const readCases = ["insert", "list", "stats"] as const;

function readCasesOf(raw: string | undefined): BenchConfig["readCases"] {
  if (!raw) return [...readCases];
  const wanted = raw
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  const unknown = wanted.filter((s) => !(readCases as readonly string[]).includes(s));
  if (unknown.length > 0 || wanted.length === 0) {
    throw new Error(`BENCH_READ_CASES: expected some of ${readCases.join(", ")}, got "${raw}"`);
  }
  return readCases.filter((name) => wanted.includes(name));
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): BenchConfig {
  return {
    sections: sectionsOf(env.BENCH_SECTIONS),
    partnerships: positiveInt(env, "BENCH_PARTNERSHIPS", 100_000),
    pageDepth: positiveInt(env, "BENCH_PAGE_DEPTH", 1000),
    samples: positiveInt(env, "BENCH_SAMPLES", 200),
    listDurationS: positiveInt(env, "BENCH_LIST_DURATION_S", 10, 0),
    durationS: positiveInt(env, "BENCH_DURATION_S", 15),
    connections: positiveInt(env, "BENCH_CONNECTIONS", 50),
    rounds: positiveInt(env, "BENCH_ROUNDS", 3),
    warmupS: positiveInt(env, "BENCH_WARMUP_S", 2, 0),
    bulkRepeats: positiveInt(env, "BENCH_BULK_REPEATS", 10),
    events: positiveInt(env, "BENCH_EVENTS", 1_000_000),
    eventsToday: positiveInt(env, "BENCH_EVENTS_TODAY", 100_000, 0),
    smallEvents: positiveInt(env, "BENCH_SMALL_EVENTS", 1000),
    refundPayments: positiveInt(env, "BENCH_REFUND_PAYMENTS", 50_000),
    payoutPartnerships: positiveInt(env, "BENCH_PAYOUT_PARTNERSHIPS", 10_000),
    payoutCommissions: positiveInt(env, "BENCH_PAYOUT_COMMISSIONS", 100_000),
    erasureEvents: positiveInt(env, "BENCH_ERASURE_EVENTS", 10_000),
    webhookDeliveries: positiveInt(env, "BENCH_WEBHOOK_DELIVERIES", 20_000),
    webhookRate: positiveInt(env, "BENCH_WEBHOOK_RATE", 200),
    readPartnerships: positiveInt(env, "BENCH_READ_PARTNERSHIPS", 10_000),
    readEvents: positiveInt(env, "BENCH_READ_EVENTS", 200_000),
    readCases: readCasesOf(env.BENCH_READ_CASES),
    stripeRate: positiveInt(env, "BENCH_STRIPE_RATE", 200),
    soakMinutes: positiveInt(env, "BENCH_SOAK_MINUTES", 10),
    soakRate: positiveInt(env, "BENCH_SOAK_RATE", 200),
    soakAutovacuum: onOff(env, "BENCH_SOAK_AUTOVACUUM", true),
  };
}

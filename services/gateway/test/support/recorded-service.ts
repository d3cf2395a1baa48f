import { rpcClientInterceptors } from "@affiliate/platform";
import type { DescService } from "@bufbuild/protobuf";
import {
  type Client,
  type ConnectError,
  createClient,
  createRouterTransport,
  type ServiceImpl,
  type Transport,
} from "@connectrpc/connect";

/**
 * What a fake service was asked, and what it should fail with. The fakes extend it, so a test
 * reads `fake.callsOf("authenticate")` or sets `fake.failures.set("getProgram", error)`.
 */
export class CallLog<Method extends string> {
  readonly calls = new Map<Method, number>();
  readonly requests: { method: Method; request: unknown }[] = [];
  readonly failures = new Map<Method, ConnectError>();

  callsOf(method: Method): number {
    return this.calls.get(method) ?? 0;
  }

  requestsOf(method: Method): unknown[] {
    return this.requests.filter((entry) => entry.method === method).map((entry) => entry.request);
  }
}

/**
 * Serves `implementation` over an in-memory transport with the real generated types, counting
 * and recording every call in `log` and failing a method when the log holds a failure for it.
 * The client side has the platform's interceptors, so calls carry deadlines as in production.
 */
export function serveRecorded<S extends DescService>(
  service: S,
  implementation: Partial<ServiceImpl<S>>,
  log: CallLog<Extract<keyof ServiceImpl<S>, string>>,
): { transport: Transport; client: Client<S> } {
  type Method = Extract<keyof ServiceImpl<S>, string>;
  const recorded = Object.fromEntries(
    Object.entries(implementation).map(([method, handler]) => [
      method,
      async (request: unknown, context: unknown) => {
        const name = method as Method;
        log.calls.set(name, log.callsOf(name) + 1);
        log.requests.push({ method: name, request });
        const failure = log.failures.get(name);
        if (failure) throw failure;
        return (handler as (request: unknown, context: unknown) => unknown)(request, context);
      },
    ]),
  ) as Partial<ServiceImpl<S>>;
  const transport = createRouterTransport(({ service: register }) => register(service, recorded), {
    transport: { interceptors: rpcClientInterceptors() },
  });
  return { transport, client: createClient(service, transport) };
}

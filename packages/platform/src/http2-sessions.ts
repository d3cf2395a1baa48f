import type http2 from "node:http2";
import { Http2SessionManager } from "@connectrpc/connect-node";

/** Sessions already given their guard. */
const guarded = new WeakSet<http2.ClientHttp2Session>();
const ignore = () => {};

/**
 * connect-node's session manager, with one guard: every HTTP/2 session it opens keeps an `error`
 * listener for as long as the session lives.
 *
 * When a server closes an idle session gracefully (a GOAWAY with NO_ERROR and no open streams:
 * every replica that drains sends one), the manager destroys the session with an error that
 * Node raises only once the socket has closed. If a call arrives in between, the manager moves
 * to a new session and takes its listeners off the old one, and the late error becomes an
 * uncaught exception that ends the process (connectrpc/connect-es#1768, unfixed in 2.3.0; the
 * manager's own `abort()` guards the same case the same way). The error concerns a session no
 * call uses any more, so there is nothing to report.
 */
export class GuardedHttp2SessionManager extends Http2SessionManager {
  override async request(
    method: string,
    path: string,
    headers: http2.OutgoingHttpHeaders,
    options: Omit<http2.ClientSessionRequestOptions, "signal">,
  ): Promise<http2.ClientHttp2Stream> {
    const stream = await super.request(method, path, headers, options);
    // The first stream of every session comes through here, in the tick the session is ready,
    // so no GOAWAY can have been handled before the guard is on.
    const session = stream.session as http2.ClientHttp2Session | undefined;
    if (session && !guarded.has(session)) {
      guarded.add(session);
      session.on("error", ignore);
    }
    return stream;
  }
}

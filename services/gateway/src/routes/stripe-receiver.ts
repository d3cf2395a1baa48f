import type { IntegrationsService } from "@affiliate/proto/integrations";
import { errorSchema } from "@affiliate/rest-shapes/schemas/common";
import { stripeReceivedSchema } from "@affiliate/rest-shapes/schemas/integrations";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { defineRoute } from "../http/define-route.js";

export interface StripeReceiverDeps {
  integrations: Client<typeof IntegrationsService>;
}

/**
 * Stripe's deliveries (contract section 13): no API key (the signature is the credential, checked
 * by integrations, which holds the secrets). The body reaches this scope as the raw bytes, never
 * parsed: the signature covers them byte for byte. Register in a scope of its own.
 */
export async function stripeReceiverRoutes(app: FastifyInstance, { integrations }: StripeReceiverDeps) {
  // Whatever the content type, the body stays bytes (up to the server's 1 MiB: 413 beyond).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));

  defineRoute(app, {
    method: "POST",
    url: "/integrations/stripe/:connection_id",
    operationId: "receiveStripeEvent",
    tags: ["Integrations"],
    summary: "Stripe's webhook endpoint (paste its URL into Stripe's dashboard)",
    description:
      "Verified with the Stripe-Signature header against the raw body (300 s tolerance), stored durably, then answered; applied asynchronously, in seconds. A redelivery of a stored event is 200 and changes nothing.",
    access: "public",
    strict: false,
    params: z.object({ connection_id: z.string().min(1).max(128) }),
    headers: z.object({ "Stripe-Signature": z.string().meta({ description: "t=…,v1=…" }) }),
    documentedBody: z.object({}).loose().meta({ description: "A Stripe event, exactly as Stripe sends it." }),
    answers: {
      200: { description: "Stored (or stored before)", schema: stripeReceivedSchema },
      400: { description: "The signature does not verify, or the body is not a Stripe event", schema: errorSchema },
      404: { description: "No such connection" },
    },
    handler: async ({ params, request }) => {
      const signature = request.headers["stripe-signature"];
      const payload = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      await integrations.receiveStripeEvent({
        connectionId: params.connection_id,
        payload,
        signature: typeof signature === "string" ? signature : "",
      });
      return { received: true };
    },
  });
}

/**
 * Stripe: whether it is connected and where Stripe should send events, the events received with
 * their outcome and detail (filter the failed ones), retry a failed event, reconcile with Stripe.
 */

import { fill, formatCount, h, label } from "@affiliate/browser-kit";
import { type ItemOf, NotFoundError } from "@affiliate/client";
import { attempt, type Screen } from "../context.js";
import { formatTime } from "../format.js";
import { actionButton, badge, cell, confirmAction, field, StatusLine, section, select, table } from "../ui.js";

type StripeEvent = ItemOf<"listStripeEvents">;

export const stripeScreen: Screen = (context) => {
  const status = new StatusLine();
  const connection = h("div", {}, h("p", { class: "loading" }, "Loading…"));
  const events = h("div", {}, h("p", { class: "loading" }, "Loading…"));
  const outcome = select(
    [
      { value: "", text: "Any outcome" },
      ...["failed", "waiting", "applied", "ignored"].map((value) => ({ value, text: label(value) })),
    ],
    "",
  );
  outcome.id = "stripe-outcome";

  const connectForm = () => {
    const secret = h("input", {
      id: "stripe-webhook-secret",
      type: "password",
      autocomplete: "off",
      required: true,
      placeholder: "whsec_…",
    });
    const apiKey = h("input", {
      id: "stripe-api-key",
      type: "password",
      autocomplete: "off",
      placeholder: "rk_live_… (optional)",
    });
    const form = h(
      "form",
      { class: "stack" },
      field("Stripe webhook signing secret", secret),
      field(
        "Stripe restricted key",
        apiKey,
        "Optional; needed to reconcile missed events. Read access to events and customers is enough.",
      ),
      h("button", { type: "submit" }, "Save connection"),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const saved = await attempt(
        context,
        status,
        () =>
          context.client.integrations.stripe.connect({
            webhook_secret: secret.value.trim(),
            ...(apiKey.value.trim() ? { api_key: apiKey.value.trim() } : {}),
          }),
        "Stripe is connected. The secrets are stored encrypted and never shown again.",
      );
      if (saved) await loadConnection();
    });
    return form;
  };

  const loadConnection = async () => {
    try {
      const { data } = await context.client.integrations.stripe.get();
      const reconcile = actionButton("Reconcile now", async () => {
        await attempt(
          context,
          status,
          () => context.client.integrations.stripe.reconcile(),
          (result) =>
            `Reconciled: ${result.data.fetched} event(s) read from Stripe, ${result.data.new} new, ${result.data.applied} applied, ${result.data.failed} failed.`,
        );
        await loadEvents();
      });
      if (!data.has_api_key) reconcile.disabled = true;
      const disconnect = actionButton(
        "Disconnect",
        async () => {
          const sure = await confirmAction({
            title: "Disconnect Stripe?",
            consequence:
              "Events Stripe sends from now on are refused (its endpoint answers 404) and the stored secrets are deleted. Events already received stay.",
            confirm: "Disconnect Stripe",
          });
          if (!sure) return;
          const done = await attempt(
            context,
            status,
            () => context.client.integrations.stripe.disconnect(),
            "Stripe is disconnected.",
          );
          if (done !== undefined) await loadConnection();
        },
        { class: "danger" },
      );
      fill(
        connection,
        h(
          "dl",
          { class: "facts" },
          h(
            "div",
            { class: "fact" },
            h("dt", {}, "State"),
            h("dd", {}, h("span", { class: "health good" }, "Connected")),
          ),
          h("div", { class: "fact" }, h("dt", {}, "Connected"), h("dd", {}, formatTime(data.connected_at))),
          h(
            "div",
            { class: "fact" },
            h("dt", {}, "Webhook URL for Stripe"),
            h("dd", {}, h("code", { class: "wrap" }, location.origin + data.webhook_path)),
          ),
          h("div", { class: "fact" }, h("dt", {}, "Events received"), h("dd", {}, formatCount(data.events_received))),
          h("div", { class: "fact" }, h("dt", {}, "Last event"), h("dd", {}, formatTime(data.last_event_at))),
          h(
            "div",
            { class: "fact" },
            h("dt", {}, "Reconciliation"),
            h("dd", {}, data.has_api_key ? "Hourly, with the stored key" : "Off: no API key stored"),
          ),
        ),
        h("div", { class: "row-actions" }, reconcile, disconnect),
        h("details", {}, h("summary", {}, "Replace the secrets"), connectForm()),
      );
    } catch (error) {
      if (error instanceof NotFoundError) {
        fill(
          connection,
          h(
            "p",
            {},
            h("span", { class: "health bad" }, "Not connected"),
            " Connect Stripe and payments, refunds and disputes flow in without code of yours.",
          ),
          connectForm(),
        );
        return;
      }
      await attempt(context, status, () => Promise.reject(error));
    }
  };

  const loadEvents = async () => {
    const filter = outcome.value as StripeEvent["outcome"] | "";
    const page = await attempt(context, status, () =>
      context.client.integrations.stripe.events.list({ limit: 50, ...(filter ? { outcome: filter } : {}) }),
    );
    if (!page) return;
    fill(
      events,
      table(
        ["Event", "Outcome", "Detail", "Received", ""],
        page.data.map((event) =>
          h(
            "tr",
            { "data-stripe-event": event.id },
            cell(event.type, h("span", { class: "sub" }, `${event.id}${event.livemode ? "" : " · test mode"}`)),
            cell(badge(event.outcome)),
            cell(h("span", { class: "detail" }, event.detail || "—")),
            cell(formatTime(event.received_at)),
            cell(
              event.outcome === "failed"
                ? actionButton(
                    "Retry",
                    async () => {
                      const retried = await attempt(
                        context,
                        status,
                        () => context.client.integrations.stripe.events.retry(event.id),
                        (result) =>
                          `Retried ${event.id}: ${result.data.outcome}${result.data.detail ? ` (${result.data.detail})` : ""}.`,
                      );
                      if (retried) await loadEvents();
                    },
                    { "aria-label": `Retry Stripe event ${event.id}` },
                  )
                : null,
            ),
          ),
        ),
        filter ? `No ${filter} event.` : "No event received yet.",
      ),
    );
  };
  outcome.addEventListener("change", () => void loadEvents());

  void loadConnection();
  void loadEvents();
  return h(
    "div",
    { class: "screen" },
    h("h1", {}, "Stripe"),
    status.element,
    section("Connection", connection),
    section(
      "Events",
      h(
        "div",
        { class: "toolbar" },
        field("Outcome", outcome),
        actionButton("Refresh", loadEvents, { class: "secondary" }),
      ),
      events,
    ),
  );
};

/**
 * Webhooks: the endpoints (a failing one says since when, a disabled one why), and for one
 * endpoint its delivery log: each delivery's status and last error, and opened, every attempt with
 * its status code, time and error; resend a delivery, send a test event, add or delete endpoints.
 */

import { fill, h } from "@affiliate/browser-kit";
import type { ItemOf } from "@affiliate/client";
import { attempt, type Screen, type ScreenContext } from "../context.js";
import { formatTime } from "../format.js";
import { actionButton, badge, cell, confirmAction, field, StatusLine, section, table } from "../ui.js";

type Webhook = ItemOf<"listWebhooks">;
type Delivery = ItemOf<"listDeliveries">;

export const webhooksScreen: Screen = (context, [id]) => (id ? endpointDetail(context, id) : endpointList(context));

/** How an endpoint is doing, in words. */
function health(webhook: Webhook): string {
  if (!webhook.enabled) {
    const why = { merchant: "you disabled it", failing: "it kept failing", gone: "it answered 410 Gone" }[
      webhook.disabled_reason ?? "merchant"
    ];
    return `Disabled: ${why}`;
  }
  return webhook.failing_since ? `Failing since ${formatTime(webhook.failing_since)}` : "Healthy";
}

function endpointList(context: ScreenContext): HTMLElement {
  const status = new StatusLine();
  const list = h("div", {}, h("p", { class: "loading" }, "Loading…"));
  const load = async () => {
    const page = await attempt(context, status, () => context.client.webhooks.list());
    if (!page) return;
    fill(
      list,
      table(
        ["Endpoint", "Health", "Events", "Created"],
        page.data.map((webhook) =>
          h(
            "tr",
            { "data-webhook": webhook.id, class: webhook.failing_since || !webhook.enabled ? "failing" : "" },
            cell(h("a", { href: `#/webhooks/${encodeURIComponent(webhook.id)}`, class: "endpoint-url" }, webhook.url)),
            cell(
              h(
                "span",
                { class: webhook.failing_since || !webhook.enabled ? "health bad" : "health good" },
                health(webhook),
              ),
            ),
            cell(webhook.events.length >= 12 ? "All events" : webhook.events.join(", ")),
            cell(formatTime(webhook.created_at)),
          ),
        ),
        "No endpoint yet: add one to be told of new affiliates, commissions and payouts.",
      ),
    );
  };

  const url = h("input", {
    id: "webhook-url",
    type: "url",
    required: true,
    placeholder: "https://example.com/webhooks/affiliates",
  });
  const form = h(
    "form",
    { class: "filters" },
    field("Endpoint URL", url),
    h("button", { type: "submit" }, "Add endpoint"),
  );
  const secret = h("div", {});
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const created = await attempt(
      context,
      status,
      () => context.client.webhooks.create({ url: url.value.trim() }),
      "Endpoint added. Copy its signing secret now: it is shown only once.",
    );
    if (!created) return;
    url.value = "";
    fill(
      secret,
      field(
        "Signing secret (shown once)",
        h("input", { type: "text", readonly: true, value: created.data.secret, class: "secret" }),
      ),
    );
    await load();
  });

  void load();
  return h(
    "div",
    { class: "screen" },
    h("h1", {}, "Webhooks"),
    status.element,
    section("Endpoints", list),
    section("Add an endpoint", form, secret),
  );
}

function endpointDetail(context: ScreenContext, id: string): HTMLElement {
  const status = new StatusLine();
  const title = h("h1", { class: "endpoint-title" }, "Endpoint");
  const summary = h("div", {}, h("p", { class: "loading" }, "Loading…"));
  const log = h("div", {}, h("p", { class: "loading" }, "Loading…"));
  const attempts = h("div", { class: "attempts" });

  const load = async () => {
    const webhook = await attempt(context, status, () => context.client.webhooks.get(id));
    if (!webhook) return;
    const endpoint = webhook.data;
    fill(title, endpoint.url);
    const test = actionButton("Send a test event", async () => {
      const sent = await attempt(
        context,
        status,
        () => context.client.webhooks.test(id),
        "A signed webhook.test event is on its way; it appears in the log below.",
      );
      if (sent) await loadLog();
    });
    const toggle = actionButton(
      endpoint.enabled ? "Disable" : "Enable",
      async () => {
        if (
          endpoint.enabled &&
          !(await confirmAction({
            title: `Disable ${endpoint.url}?`,
            consequence:
              "Nothing is sent to it until you enable it again; events meanwhile are kept as failed deliveries that you can resend.",
            confirm: "Disable endpoint",
          }))
        )
          return;
        const done = await attempt(
          context,
          status,
          () => context.client.webhooks.update(id, { enabled: !endpoint.enabled }),
          endpoint.enabled ? "Endpoint disabled." : "Endpoint enabled.",
        );
        if (done) await load();
      },
      { class: "secondary" },
    );
    const remove = actionButton(
      "Delete endpoint",
      async () => {
        const sure = await confirmAction({
          title: `Delete ${endpoint.url}?`,
          consequence: "No more events are sent to it, and its delivery log is deleted. This cannot be undone.",
          confirm: "Delete endpoint",
        });
        if (!sure) return;
        const done = await attempt(context, status, () => context.client.webhooks.delete(id));
        if (done !== undefined) context.navigate("webhooks");
      },
      { class: "danger" },
    );
    fill(
      summary,
      h("p", { class: endpoint.failing_since || !endpoint.enabled ? "health bad" : "health good" }, health(endpoint)),
      h("p", { class: "sub" }, `Events: ${endpoint.events.join(", ")}`),
      h("div", { class: "row-actions" }, test, toggle, remove),
    );
  };

  const openAttempts = async (delivery: Delivery) => {
    fill(attempts, h("p", { class: "loading" }, "Loading…"));
    const detail = await attempt(context, status, () => context.client.webhooks.deliveries.get(id, delivery.id));
    if (!detail) return;
    fill(
      attempts,
      h("h3", {}, `Attempts of ${detail.data.event_type} (${detail.data.id})`),
      table(
        ["When", "Status code", "Took", "Error"],
        detail.data.attempts.map((tried) =>
          h(
            "tr",
            { class: "attempt" },
            cell(formatTime(tried.attempted_at)),
            cell(tried.status_code === null ? "no answer" : String(tried.status_code)),
            cell(`${tried.duration_ms} ms`),
            cell(tried.error ?? "—"),
          ),
        ),
        "No attempt yet.",
      ),
    );
  };

  const loadLog = async () => {
    const page = await attempt(context, status, () => context.client.webhooks.deliveries.list(id, { limit: 50 }));
    if (!page) return;
    fill(
      log,
      table(
        ["Event", "Status", "Attempts", "Last answer", "Created", ""],
        page.data.map((delivery) => {
          const show = actionButton("Attempts", () => openAttempts(delivery), {
            class: "secondary",
            "aria-label": `Show the attempts of delivery ${delivery.id}`,
          });
          const resend = actionButton(
            "Resend",
            async () => {
              const sent = await attempt(
                context,
                status,
                () => context.client.webhooks.deliveries.retry(id, delivery.id),
                `Resending ${delivery.event_type} with the same webhook-id.`,
              );
              if (sent) await loadLog();
            },
            { "aria-label": `Resend delivery ${delivery.id}` },
          );
          return h(
            "tr",
            { "data-delivery": delivery.id },
            cell(delivery.event_type, h("span", { class: "sub" }, delivery.event_id)),
            cell(badge(delivery.status)),
            cell(String(delivery.attempts)),
            cell(
              delivery.last_status_code === null
                ? delivery.attempts > 0
                  ? "no answer"
                  : "—"
                : String(delivery.last_status_code),
              delivery.last_error ? h("span", { class: "sub last-error" }, delivery.last_error) : null,
            ),
            cell(formatTime(delivery.created_at)),
            cell(h("div", { class: "row-actions" }, show, resend)),
          );
        }),
        "Nothing delivered yet.",
      ),
    );
  };

  void load();
  void loadLog();
  return h(
    "div",
    { class: "screen" },
    h("p", { class: "back" }, h("a", { href: "#/webhooks" }, "← All endpoints")),
    title,
    status.element,
    section("Endpoint", summary),
    section(
      "Delivery log",
      h("div", { class: "toolbar" }, actionButton("Refresh", loadLog, { class: "secondary" })),
      log,
      attempts,
    ),
  );
}

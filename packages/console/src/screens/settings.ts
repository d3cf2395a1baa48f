/**
 * Settings: the program's terms (rate, hold, payout minimum, attribution window, approval, the
 * referral link), a preview of what a payment would earn under them, and the keys.
 */

import { fill, h, money } from "@affiliate/browser-kit";
import { attempt, type Screen } from "../context.js";
import { parseCents } from "../format.js";
import { actionButton, amountCell, cell, confirmAction, field, StatusLine, section, select, table } from "../ui.js";

/** Basis points as a percent a person reads and types ("20" or "12.5"), and back. */
const percentOf = (bps: number) => String(bps / 100);
function bpsOf(text: string): number | undefined {
  const match = /^\s*(\d{1,3})(?:\.(\d{1,2}))?\s*%?\s*$/.exec(text);
  if (!match) return undefined;
  return Number(match[1]) * 100 + Number((match[2] ?? "").padEnd(2, "0") || "0");
}

export const settingsScreen: Screen = (context) => {
  const status = new StatusLine();
  const programBox = h("div", {}, h("p", { class: "loading" }, "Loading…"));
  const previewResult = h("div", { class: "preview-result" });

  const load = async () => {
    const loaded = await attempt(context, status, () => context.client.program.get());
    if (!loaded) return;
    const program = loaded.data;
    const rate = h("input", {
      id: "program-rate",
      type: "text",
      inputmode: "decimal",
      value: percentOf(program.commission_rate_bps),
    });
    const tier2 = h("input", {
      id: "program-tier2",
      type: "text",
      inputmode: "decimal",
      value: percentOf(program.tier2_rate_bps),
    });
    const holdDays = h("input", { id: "program-hold", type: "number", min: 0, max: 365, value: program.hold_days });
    const minimum = h("input", {
      id: "program-minimum",
      type: "text",
      inputmode: "decimal",
      value: money(program.payout_minimum_cents, program.currency).replace(/[^\d.,]/g, ""),
    });
    const windowDays = h("input", {
      id: "program-window",
      type: "number",
      min: 1,
      max: 365,
      value: program.attribution_window_days,
    });
    const approval = select(
      [
        { value: "true", text: "Automatically" },
        { value: "false", text: "After my review (pending queue)" },
      ],
      String(program.auto_approve),
    );
    approval.id = "program-approval";
    const template = h("input", {
      id: "program-template",
      type: "url",
      value: program.referral_url_template ?? "",
      placeholder: "https://example.com/?ref={code}",
    });
    const form = h(
      "form",
      { class: "stack settings-form" },
      field("Commission rate (%)", rate, "Of each referred payment, level 1."),
      field("Second-tier rate (%)", tier2, "What a recruiter earns on their recruits' payments."),
      field("Hold (days)", holdDays, "How long a commission waits before it can be paid (refund window)."),
      field(`Payout minimum (${program.currency.toUpperCase()})`, minimum),
      field("Attribution window (days)", windowDays),
      field("New affiliates join", approval),
      field(
        "Referral link template",
        template,
        "Shown to affiliates as their link; {code} is replaced by their referral code.",
      ),
      h("button", { type: "submit" }, "Save settings"),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const rateBps = bpsOf(rate.value);
      const tier2Bps = bpsOf(tier2.value);
      const minimumCents = parseCents(minimum.value);
      if (rateBps === undefined || tier2Bps === undefined || rateBps > 10_000 || tier2Bps > 10_000) {
        status.error("A rate is a percent from 0 to 100, with at most two decimals (12.5).");
        return;
      }
      if (minimumCents === undefined) {
        status.error("The payout minimum is an amount such as 50 or 50.00.");
        return;
      }
      await attempt(
        context,
        status,
        () =>
          context.client.program.update({
            commission_rate_bps: rateBps,
            tier2_rate_bps: tier2Bps,
            hold_days: Number(holdDays.value),
            payout_minimum_cents: minimumCents,
            attribution_window_days: Number(windowDays.value),
            auto_approve: approval.value === "true",
            referral_url_template: template.value.trim() || null,
          }),
        "Saved. The new terms apply to commissions created from now on.",
      );
    });
    fill(
      programBox,
      h("p", {}, `${program.name} · ${program.product_id} · amounts in ${program.currency.toUpperCase()}`),
      form,
    );
  };

  const amount = h("input", { id: "preview-amount", type: "text", inputmode: "decimal", placeholder: "100.00" });
  const code = h("input", { id: "preview-code", type: "text", placeholder: "ADA20" });
  const preview = h(
    "form",
    { class: "filters" },
    field("Payment amount", amount),
    field("Referral code", code),
    h("button", { type: "submit" }, "Preview"),
  );
  preview.addEventListener("submit", async (event) => {
    event.preventDefault();
    const cents = parseCents(amount.value);
    if (cents === undefined || cents <= 0n) {
      status.error("Enter a payment amount such as 100 or 99.90.");
      return;
    }
    const result = await attempt(context, status, () =>
      context.client.commissions.preview({ amount_cents: cents, referral_code: code.value.trim() }),
    );
    if (!result) return;
    const { data } = result;
    fill(
      previewResult,
      data.commission_skipped
        ? h("p", {}, `Nothing earned: past the ${data.commission_skipped.replaceAll("_", " ")} limit.`)
        : table(
            ["Level", "Rule", "Earns"],
            data.commissions.map((commission) =>
              h(
                "tr",
                { class: "preview-line" },
                cell(String(commission.level)),
                cell(
                  commission.rule.type === "flat"
                    ? `flat (${commission.rule.source})`
                    : `${percentOf(commission.rule.rate_bps ?? 0)}% (${commission.rule.source})`,
                ),
                amountCell(money(commission.amount_cents, context.currency)),
              ),
            ),
            "No commission: the code is unknown or its affiliate is not active.",
          ),
    );
  });

  const publishable = h("div", { class: "publishable-keys" }, h("p", { class: "loading" }, "Loading…"));
  const showPublishable = (keys: { publishable_key: string; test_publishable_key: string }) =>
    fill(
      publishable,
      h(
        "dl",
        { class: "facts" },
        h(
          "div",
          { class: "fact" },
          h("dt", {}, "Live"),
          h("dd", {}, h("code", { class: "wrap" }, keys.publishable_key)),
        ),
        h(
          "div",
          { class: "fact" },
          h("dt", {}, "Test"),
          h("dd", {}, h("code", { class: "wrap" }, keys.test_publishable_key)),
        ),
      ),
    );
  const loadPublishable = async () => {
    const keys = await attempt(context, status, () => context.client.request("getPublishableKeys", {}));
    if (keys) showPublishable(keys.data);
  };
  const rotatePublishable = actionButton(
    "Rotate publishable keys",
    async () => {
      const sure = await confirmAction({
        title: "Rotate the publishable keys?",
        consequence:
          "A new pair is issued and the current one stops recording clicks at once: update the data-key of the attribution script on your pages right after, or clicks are lost until you do.",
        confirm: "Rotate publishable keys",
      });
      if (!sure) return;
      const rotated = await attempt(
        context,
        status,
        () => context.client.request("rotatePublishableKeys", {}),
        "New publishable keys issued; the old pair no longer records clicks.",
      );
      if (rotated) showPublishable(rotated.data);
    },
    { class: "danger" },
  );

  void load();
  void loadPublishable();
  return h(
    "div",
    { class: "screen" },
    h("h1", {}, "Settings"),
    status.element,
    section("Program", programBox),
    section(
      "Preview a commission",
      h("p", {}, "What a payment would earn now, under the terms above; nothing is recorded."),
      preview,
      previewResult,
    ),
    section(
      "Keys",
      h("h3", {}, "Publishable keys (the attribution script's data-key)"),
      publishable,
      h("div", { class: "row-actions" }, rotatePublishable),
      h("h3", {}, "Secret key"),
      h(
        "p",
        {},
        "Your secret key is shown once, when the operator creates or rotates it. Rotating it ends every console session, this one included: sign in again with the new key.",
      ),
      h("pre", { class: "command" }, "npm run --silent admin -- keys rotate --product <product id>"),
    ),
  );
};

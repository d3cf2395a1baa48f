// A PromQL check without a Prometheus: the expression's brackets, quotes, label matchers and range
// durations are well formed, and every metric it selects is one the services export. It is not a
// full parser (operator precedence and function arity are Prometheus' to check when the rule
// loads); it catches what a rule in review usually gets wrong: a misspelt or removed metric, an
// unclosed bracket, a bad duration or matcher.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const functions = new Set(
  (
    "abs absent absent_over_time avg_over_time ceil changes clamp clamp_max clamp_min count_over_time day_of_month " +
    "day_of_week days_in_month delta deriv exp floor histogram_quantile holt_winters hour idelta increase irate " +
    "label_join label_replace last_over_time ln log10 log2 max_over_time min_over_time minute month predict_linear " +
    "quantile_over_time rate resets round scalar sgn sort sort_desc sqrt stddev_over_time stdvar_over_time " +
    "sum_over_time time timestamp vector year present_over_time"
  ).split(" "),
);
const aggregations = new Set("sum min max avg group stddev stdvar count count_values bottomk topk quantile".split(" "));
const keywords = new Set("by without on ignoring group_left group_right bool and or unless offset inf nan".split(" "));
const duration = /^(\d+(ms|s|m|h|d|w|y))+$/;
const identifier = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/**
 * The metric families the services export: the `name:` of every prom-client metric registered in
 * packages/*\/src and services/*\/src (`new Counter({ name: … })`, or a service's own through the
 * platform's `serviceCounter({ name: … })`), with a histogram's `_bucket`, `_sum` and `_count` series,
 * and prom-client's default metrics (collectDefaultMetrics) read from its own sources.
 */
export function exportedMetrics(repositoryRoot) {
  const names = new Set();
  const sources = [];
  for (const group of ["packages", "services"]) {
    for (const workspace of readdirSync(join(repositoryRoot, group))) {
      const src = join(repositoryRoot, group, workspace, "src");
      try {
        for (const file of readdirSync(src, { recursive: true })) {
          if (String(file).endsWith(".ts")) sources.push(readFileSync(join(src, String(file)), "utf8"));
        }
      } catch {
        // A workspace without src/.
      }
    }
  }
  for (const source of sources) {
    // A service's own counters are declared through the platform's serviceCounter({ name, … }).
    const declarations =
      /(?:new (Counter|Gauge|Histogram|Summary)|service(Counter))\(\{\s*name: "([a-z_:][a-z0-9_:]*)"/g;
    for (const match of source.matchAll(declarations)) {
      const [, newType, serviceType, name] = match;
      const type = newType ?? serviceType;
      names.add(name);
      if (type === "Histogram" || type === "Summary") {
        for (const suffix of ["_bucket", "_sum", "_count"]) names.add(`${name}${suffix}`);
      }
    }
  }
  if (sources.some((source) => source.includes("collectDefaultMetrics("))) {
    const defaults = join(repositoryRoot, "node_modules", "prom-client", "lib", "metrics");
    for (const file of readdirSync(defaults).filter((name) => name.endsWith(".js"))) {
      for (const match of readFileSync(join(defaults, file), "utf8").matchAll(/'((?:nodejs|process)_[a-z0-9_]+)'/g)) {
        names.add(match[1]);
        if (match[1] === "nodejs_gc_duration_seconds") {
          for (const suffix of ["_bucket", "_sum", "_count"]) names.add(`${match[1]}${suffix}`);
        }
      }
    }
  }
  return names;
}

/** Problems of one PromQL expression; `metrics` is what exportedMetrics answered. */
export function checkExpression(expr, metrics) {
  const problems = [];
  // Strings first: their content is not PromQL.
  const strings = [];
  let rest = expr.replace(/"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'/g, (_, double, single) => {
    strings.push(double ?? single);
    return ` __string${strings.length - 1}__ `;
  });
  if (/["'`]/.test(rest)) problems.push("an unclosed string");
  // Brackets balance and nest.
  const stack = [];
  const pairs = { ")": "(", "]": "[", "}": "{" };
  for (const character of rest) {
    if ("([{".includes(character)) stack.push(character);
    else if (character in pairs && stack.pop() !== pairs[character]) {
      problems.push(`an unbalanced "${character}"`);
      break;
    }
  }
  if (stack.length > 0) problems.push(`an unclosed "${stack.at(-1)}"`);
  // Label matchers: label op string, separated by commas.
  rest = rest.replace(/\{([^{}]*)\}/g, (_, body) => {
    for (const matcher of body.split(",").map((part) => part.trim())) {
      if (matcher === "") continue;
      if (!/^[a-zA-Z_][a-zA-Z0-9_]* *(=~|!~|!=|=) *__string\d+__$/.test(matcher)) {
        problems.push(`a bad label matcher "${matcher.replace(/__string(\d+)__/g, (_, n) => `"${strings[n]}"`)}"`);
      }
    }
    return " ";
  });
  // Range and subquery durations.
  rest = rest.replace(/\[([^\]]*)\]/g, (_, body) => {
    const [range, step] = body.split(":").map((part) => part.trim());
    if (!duration.test(range) || (step !== undefined && step !== "" && !duration.test(step))) {
      problems.push(`a bad range "[${body}]"`);
    }
    return " ";
  });
  // Grouping label lists are labels, not metrics.
  rest = rest.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)/g, (_, keyword, labels) => {
    for (const label of labels.split(",").map((part) => part.trim())) {
      if (label !== "" && !identifier.test(label)) problems.push(`a bad label "${label}" in ${keyword}(...)`);
    }
    return ` ${keyword} `;
  });
  rest = rest.replace(/\boffset\s+\S+/g, " ");
  const selected = [];
  for (const token of rest.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? []) {
    if (/^__string\d+__$/.test(token) || functions.has(token) || aggregations.has(token) || keywords.has(token)) {
      continue;
    }
    selected.push(token);
    if (!metrics.has(token)) problems.push(`selects "${token}", which no service exports`);
  }
  if (selected.length === 0) problems.push("selects no metric");
  return problems;
}

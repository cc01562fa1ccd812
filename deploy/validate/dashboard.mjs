// Checks the Grafana dashboards under deploy/grafana/ against the server's metric names
// (metrics.json: the names of issue 28's contract, with their type and labels):
//  - every ecsnet_* name in a PromQL expression (panels' targets, the variables' queries) is a
//    metric of metrics.json, a histogram only through its _bucket, _sum or _count series, and
//    _bucket/_sum/_count only of a histogram;
//  - label matchers on a metric and `by (...)` / `without (...)` name labels it has (or the
//    target labels Prometheus adds: pod, instance, job, namespace; le on a _bucket);
//  - every expression parses as PromQL (`promtool check rules` on the expressions, Grafana's
//    variables replaced by values; Debian's `prometheus` package has promtool);
//  - the model: a Prometheus data source variable `datasource`, every query on it, variables
//    used in expressions defined, panel ids unique.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const metricsFile = path.join(here, 'metrics.json');

export function loadMetrics(file = metricsFile) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

export function listDashboards(deployDir) {
  const dir = path.join(deployDir, 'grafana');
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((f) => path.join(dir, f));
}

const targetLabels = ['pod', 'instance', 'job', 'namespace'];
const histogramSeries = ['_bucket', '_sum', '_count'];
// Grafana's built-in variables, and what the PromQL check puts in their place.
const builtins = { __rate_interval: '1m', __interval: '1m', __range: '1h', __range_s: '3600', __interval_ms: '60000' };

// The metric a series name belongs to: { metric, series } or { error }.
function resolveSeries(name, metrics) {
  if (metrics[name]) {
    if (metrics[name].type === 'histogram') {
      return { error: `${name} is a histogram: its series are ${histogramSeries.map((s) => name + s).join(', ')}` };
    }
    return { metric: name };
  }
  const suffix = histogramSeries.find((s) => name.endsWith(s));
  const base = suffix ? name.slice(0, -suffix.length) : undefined;
  if (base && metrics[base]?.type === 'histogram') return { metric: base, bucket: suffix === '_bucket' };
  if (base && metrics[base]) return { error: `${name}: ${base} is a ${metrics[base].type}, not a histogram` };
  return { error: `${name} is not a metric of metrics.json (issue 28's contract)` };
}

// Errors of one PromQL expression (metric names and labels); `where` names it.
export function expressionErrors(expr, metrics, where) {
  const errors = [];
  const allowed = new Set(targetLabels);
  // Names of series: ecsnet_ followed by name characters, not inside a quoted string.
  const unquoted = expr.replace(/"(?:[^"\\]|\\.)*"/g, (q) => ' '.repeat(q.length));
  for (const m of unquoted.matchAll(/(?<![A-Za-z0-9_:])(ecsnet_[A-Za-z0-9_:]*)(\s*\{([^}]*)\})?/g)) {
    const resolved = resolveSeries(m[1], metrics);
    if (resolved.error) {
      errors.push({ path: where, message: resolved.error });
      continue;
    }
    const labels = new Set([...targetLabels, ...metrics[resolved.metric].labels, ...(resolved.bucket ? ['le'] : [])]);
    labels.forEach((l) => allowed.add(l));
    // m[3]: the matchers, their quoted values blanked out.
    for (const lm of (m[3] ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)/g)) {
      if (!labels.has(lm[1])) errors.push({ path: where, message: `${m[1]} has no label "${lm[1]}" (it has: ${[...labels].join(', ')})` });
    }
  }
  for (const g of unquoted.matchAll(/\b(by|without)\s*\(([^)]*)\)/g)) {
    for (const label of g[2].split(',').map((l) => l.trim()).filter(Boolean)) {
      if (!allowed.has(label)) errors.push({ path: where, message: `${g[1]} (${label}): no metric of this expression has the label "${label}"` });
    }
  }
  return errors;
}

// Every PromQL expression of a dashboard: [{ where, expr }].
function expressions(dashboard) {
  const out = [];
  const walk = (panels, prefix) => (panels ?? []).forEach((p, i) => {
    const at = `${prefix}[${i}]`;
    (p.targets ?? []).forEach((t, j) => {
      if (typeof t.expr === 'string') out.push({ where: `${at}.targets[${j}].expr (${p.title})`, expr: t.expr });
    });
    walk(p.panels, `${at}.panels`);
  });
  walk(dashboard.panels, 'panels');
  (dashboard.templating?.list ?? []).forEach((v, i) => {
    if (v.type !== 'query') return;
    const query = typeof v.query === 'string' ? v.query : v.query?.query;
    const labelValues = /^label_values\(\s*(.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)$/.exec(query ?? '');
    // label_values(metric, label) is Grafana's, not PromQL: the metric is checked as one.
    if (labelValues) out.push({ where: `templating.list[${i}].query`, expr: labelValues[1], grafanaLabel: labelValues[2] });
    else if (query) out.push({ where: `templating.list[${i}].query`, expr: query });
  });
  return out;
}

function allPanels(panels) {
  return (panels ?? []).flatMap((p) => [p, ...allPanels(p.panels)]);
}

// PromQL syntax, by promtool: one recording rule per expression.
export function promqlSyntaxErrors(list, variables) {
  if (list.length === 0) return [];
  const substitute = (expr) => expr.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}?/g, (_, name) => builtins[name] ?? (variables.has(name) ? '.*' : `$${name}`));
  const rules = list.map((e, i) => `      - record: ecsnet:dashboard_check_${i}\n        expr: ${JSON.stringify(substitute(e.expr))}`).join('\n');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecsnet-promql-'));
  try {
    const file = path.join(dir, 'rules.yml');
    fs.writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules}\n`);
    const run = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
    if (run.error) return [{ path: '(promql)', message: `promtool not found (Debian package prometheus): ${run.error.message}` }];
    if (run.status === 0) return [];
    // promtool names the failing rule by its number in the group ("group \"dashboard\", rule 3").
    const errors = [];
    for (const m of `${run.stdout}\n${run.stderr}`.matchAll(/rule (\d+),[^\n]*?:\s*([^\n]*)/g)) {
      const e = list[Number(m[1]) - 1];
      errors.push({ path: e ? e.where : '(promql)', message: `PromQL: ${m[2]}${e ? `: ${e.expr}` : ''}` });
    }
    return errors.length ? errors : [{ path: '(promql)', message: `promtool check rules failed: ${run.stdout}${run.stderr}`.trim() }];
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export function dashboardErrors(file, metrics = loadMetrics()) {
  let dashboard;
  try {
    dashboard = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    return [{ path: '(file)', message: `JSON: ${e.message}` }];
  }
  const errors = [];
  const variables = new Map((dashboard.templating?.list ?? []).map((v) => [v.name, v]));
  const ds = variables.get('datasource');
  if (!ds || ds.type !== 'datasource' || ds.query !== 'prometheus') {
    errors.push({ path: 'templating.list', message: 'needs a variable "datasource" of type datasource, query prometheus' });
  }
  for (const v of variables.values()) {
    if (v.type === 'query' && v.datasource?.uid !== '${datasource}') {
      errors.push({ path: `templating.list(${v.name}).datasource`, message: 'must be { type: prometheus, uid: ${datasource} }' });
    }
  }
  const ids = new Set();
  for (const p of allPanels(dashboard.panels)) {
    if (ids.has(p.id)) errors.push({ path: `panels(${p.title})`, message: `duplicate panel id ${p.id}` });
    ids.add(p.id);
    if (p.type === 'row') continue;
    if (!p.gridPos) errors.push({ path: `panels(${p.title})`, message: 'no gridPos' });
    if ((p.targets ?? []).length === 0) errors.push({ path: `panels(${p.title})`, message: 'no query' });
    if (p.datasource?.uid !== '${datasource}') errors.push({ path: `panels(${p.title}).datasource`, message: 'must be { type: prometheus, uid: ${datasource} }' });
  }
  const list = expressions(dashboard);
  for (const e of list) {
    errors.push(...expressionErrors(e.expr, metrics, e.where));
    if (e.grafanaLabel) {
      const metric = e.expr.trim();
      const labels = [...targetLabels, ...(metrics[metric]?.labels ?? [])];
      if (metrics[metric] && !labels.includes(e.grafanaLabel)) errors.push({ path: e.where, message: `${metric} has no label "${e.grafanaLabel}"` });
    }
    for (const m of e.expr.matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)) {
      if (!variables.has(m[1]) && !(m[1] in builtins)) errors.push({ path: e.where, message: `variable $${m[1]} is not defined` });
    }
  }
  errors.push(...promqlSyntaxErrors(list, new Set(variables.keys())));
  return errors;
}

// node --test dashboard.test.mjs: the Grafana dashboard uses only the contract's metrics
// (metrics.json), and the check finds a wrong name, label, histogram series or PromQL syntax.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dashboardErrors, expressionErrors, loadMetrics, promqlSyntaxErrors } from './dashboard.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const dashboardFile = path.join(here, '..', 'grafana', 'ecsnet-dashboard.json');
const metrics = loadMetrics();
const original = fs.readFileSync(dashboardFile, 'utf8');

function errorsOfEdited(edit) {
  const after = edit(original);
  assert.notEqual(after, original, 'the edit changed nothing');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecsnet-dashboard-'));
  try {
    const file = path.join(dir, 'dashboard.json');
    fs.writeFileSync(file, after);
    return dashboardErrors(file, metrics);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const show = (errors) => errors.map((e) => `${e.path}: ${e.message}`).join('\n') || '(none)';

test('metrics.json lists the names, each with a type (the C++ test checks it against the registry)', () => {
  const names = Object.keys(metrics);
  for (const name of ['ecsnet_tick_duration_seconds', 'ecsnet_commands_total', 'ecsnet_clients']) {
    assert.ok(names.includes(name), name);
  }
  for (const [name, m] of Object.entries(metrics)) {
    assert.match(name, /^ecsnet_[a-z0-9_]+$/);
    assert.ok(['counter', 'gauge', 'histogram'].includes(m.type), `${name}: ${m.type}`);
    assert.equal(m.type === 'counter', name.endsWith('_total'), `${name}: counters and only counters end in _total`);
    assert.ok(Array.isArray(m.labels));
  }
});

test('the dashboard passes, and uses every metric the issue asks to watch', () => {
  assert.equal(show(dashboardErrors(dashboardFile, metrics)), '(none)');
  const used = new Set(original.match(/ecsnet_[a-z0-9_]+/g).map((n) => n.replace(/_(bucket|sum|count)$/, '')));
  for (const name of ['ecsnet_tick_duration_seconds', 'ecsnet_tick_overruns_total', 'ecsnet_ticks_skipped_total', 'ecsnet_entities',
    'ecsnet_clients', 'ecsnet_observers', 'ecsnet_connections_pending', 'ecsnet_bytes_sent_total', 'ecsnet_bytes_received_total',
    'ecsnet_frames_sent_total', 'ecsnet_frames_received_total', 'ecsnet_commands_total', 'ecsnet_inputs_total', 'ecsnet_resyncs_total',
    'ecsnet_rate_limited_total', 'ecsnet_disconnects_total', 'ecsnet_snapshot_size_bytes', 'ecsnet_send_queue_bytes',
    'ecsnet_system_failures_total', 'ecsnet_client_budget_use_ratio', 'ecsnet_build_info']) {
    assert.ok(used.has(name), `the dashboard does not show ${name}`);
  }
});

test('a metric name that is not the contract\'s is reported with its panel', () => {
  const errors = errorsOfEdited((t) => t.replace('rate(ecsnet_disconnects_total{', 'rate(ecsnet_disconnect_total{'));
  assert.ok(errors.some((e) => e.path.includes('Disconnects by reason') && e.message.includes('ecsnet_disconnect_total is not a metric')), show(errors));
});

test('a histogram without _bucket, and _bucket of a counter, are reported', () => {
  let errors = errorsOfEdited((t) => t.replace('rate(ecsnet_tick_duration_seconds_bucket{', 'rate(ecsnet_tick_duration_seconds{'));
  assert.ok(errors.some((e) => e.message.includes('ecsnet_tick_duration_seconds is a histogram')), show(errors));
  errors = errorsOfEdited((t) => t.replace('ecsnet_ticks_total{', 'ecsnet_ticks_total_bucket{'));
  assert.ok(errors.some((e) => e.message.includes('ecsnet_ticks_total is a counter, not a histogram')), show(errors));
});

test('a label the metric does not have is reported (matcher and by clause)', () => {
  let errors = errorsOfEdited((t) => t.replace('sum by (reason) (rate(ecsnet_disconnects_total', 'sum by (cause) (rate(ecsnet_disconnects_total'));
  assert.ok(errors.some((e) => e.message.includes('by (cause)')), show(errors));
  errors = errorsOfEdited((t) => t.replace('ecsnet_entities{pod=~\\"$world\\"}', 'ecsnet_entities{world=~\\"$world\\"}'));
  assert.ok(errors.some((e) => e.message.includes('ecsnet_entities has no label "world"')), show(errors));
  assert.deepEqual(expressionErrors('sum by (result) (rate(ecsnet_commands_total{result!="ok"}[5m]))', metrics, 'x'), []);
});

test('a PromQL syntax error is reported by promtool with its panel', () => {
  const errors = errorsOfEdited((t) => t.replace('sum by (what) (rate(ecsnet_rate_limited_total', 'sum by (what) (rate(ecsnet_rate_limited_total[5m]'));
  assert.ok(errors.some((e) => e.path.includes('Rate-limited') && e.message.startsWith('PromQL')), show(errors));
});

test('an undefined variable and a panel not on the datasource variable are reported', () => {
  let errors = errorsOfEdited((t) => t.replace('ecsnet_send_queue_bytes{pod=~\\"$world\\"}', 'ecsnet_send_queue_bytes{pod=~\\"$server\\"}'));
  assert.ok(errors.some((e) => e.message.includes('$server is not defined')), show(errors));
  errors = errorsOfEdited((t) => t.replace('"uid": "${datasource}"', '"uid": "prometheus"'));
  assert.ok(errors.some((e) => e.message.includes('${datasource}')), show(errors));
});

test('the PromQL of docs/DEPLOY.md (queries table and alert rules) uses the contract\'s metrics and parses', () => {
  const doc = fs.readFileSync(path.join(here, '..', '..', 'docs', 'DEPLOY.md'), 'utf8');
  const list = [];
  for (const m of doc.matchAll(/^\| [^|]+ \| (`.*`) \|$/gm)) {
    for (const q of m[1].matchAll(/`([^`]*ecsnet_[^`]*)`/g)) list.push({ where: 'DEPLOY.md queries table', expr: q[1] });
  }
  const rules = [...doc.matchAll(/```yaml\n(groups:[\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(rules.length, 1, 'one alert rules block');
  for (const m of rules[0].matchAll(/expr: (?:\|\n((?: {10}.*\n)+)|(.*)\n)/g)) list.push({ where: 'DEPLOY.md alert rules', expr: (m[1] ?? m[2]).trim() });
  assert.ok(list.length >= 8, `found ${list.length} expressions`);
  const errors = list.flatMap((e) => expressionErrors(e.expr, metrics, e.where));
  errors.push(...promqlSyntaxErrors(list, new Set()));
  assert.equal(show(errors), '(none)');
  // And the rules file as a whole, as Prometheus would load it.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecsnet-alerts-'));
  try {
    fs.writeFileSync(path.join(dir, 'alerts.yml'), rules[0]);
    const run = spawnSync('promtool', ['check', 'rules', path.join(dir, 'alerts.yml')], { encoding: 'utf8' });
    assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

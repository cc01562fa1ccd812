// node --test test.mjs: the validator passes the real manifests and reports each deliberate
// break of a copy of them (made in a temporary directory), naming the file and the path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { validate, defaultDeployDir, defaultCrdsDir, formatError } from './validate.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const crdsDir = process.env.AGONES_CRDS_DIR || defaultCrdsDir;

// A copy of deploy/ (without validate/) with `edit(text)` applied to one file.
function brokenCopy(file, edit) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecsnet-deploy-'));
  for (const sub of fs.readdirSync(defaultDeployDir, { withFileTypes: true })) {
    if (!sub.isDirectory() || sub.name === 'validate') continue;
    fs.cpSync(path.join(defaultDeployDir, sub.name), path.join(dir, sub.name), { recursive: true });
  }
  const target = path.join(dir, file);
  const before = fs.readFileSync(target, 'utf8');
  const after = edit(before);
  assert.notEqual(after, before, `the edit of ${file} changed nothing`);
  fs.writeFileSync(target, after);
  return dir;
}

function errorsOf(dir) {
  try {
    return validate({ deployDir: dir, crdsDir }).errors;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function assertReported(errors, file, pathPart, messagePart) {
  const hit = errors.find((e) => e.file === file && e.path.includes(pathPart) && e.message.includes(messagePart));
  assert.ok(hit, `expected an error in ${file} at ${pathPart} (${messagePart}); got:\n${errors.map(formatError).join('\n') || '(none)'}`);
}

test('the real manifests pass', () => {
  const result = validate({ deployDir: defaultDeployDir, crdsDir });
  assert.deepEqual(result.errors.map(formatError), []);
  for (const kind of ['GameServer', 'Fleet', 'FleetAutoscaler', 'GameServerAllocation', 'Deployment', 'StatefulSet', 'Service', 'PodMonitor']) {
    assert.ok(result.kinds[kind] >= 1, `no ${kind} was validated`);
  }
  assert.equal(result.dashboards, 1);
});

test('the CRDs are the vendored ones by default, and their directory can be overridden', () => {
  assert.equal(defaultCrdsDir, path.join(here, 'crds'));
  for (const file of ['gameservers.agones.dev.yaml', 'fleets.agones.dev.yaml', 'fleetautoscalers.autoscaling.agones.dev.yaml', 'LICENSE']) {
    assert.ok(fs.existsSync(path.join(here, 'crds', file)), `crds/${file} is missing`);
  }
  const missing = spawnSync(process.execPath, [path.join(here, 'validate.mjs'), '--crds', path.join(os.tmpdir(), 'ecsnet-no-such-crds')], { encoding: 'utf8' });
  assert.equal(missing.status, 2);
  assert.match(missing.stderr, /Agones CRDs not found/);
  const env = spawnSync(process.execPath, [path.join(here, 'validate.mjs')], { encoding: 'utf8', env: { ...process.env, AGONES_CRDS_DIR: path.join(os.tmpdir(), 'ecsnet-no-such-crds') } });
  assert.equal(env.status, 2);
});

test('the PodMonitor: a typo, a misspelt field, a wrong port or selector are reported', () => {
  let errors = errorsOf(brokenCopy('prometheus/podmonitor.yaml', (t) => t.replace('interval: 15s', 'interval: 15 s')));
  assertReported(errors, 'prometheus/podmonitor.yaml', 'spec.podMetricsEndpoints[0].interval', 'pattern');
  errors = errorsOf(brokenCopy('prometheus/podmonitor.yaml', (t) => t.replace('podMetricsEndpoints:', 'podMetricEndpoints:')));
  assertReported(errors, 'prometheus/podmonitor.yaml', 'spec.podMetricEndpoints', 'unknown field');
  errors = errorsOf(brokenCopy('prometheus/podmonitor.yaml', (t) => t.replace('port: admin', 'port: game')));
  assertReported(errors, 'prometheus/podmonitor.yaml', 'spec.podMetricsEndpoints[0].port', 'admin port');
  errors = errorsOf(brokenCopy('prometheus/podmonitor.yaml', (t) => t.replace('      app.kubernetes.io/name: ecsnet\n  podMetricsEndpoints', '      app.kubernetes.io/name: ecsnett\n  podMetricsEndpoints')));
  assertReported(errors, 'prometheus/podmonitor.yaml', 'spec.selector.matchLabels', 'selects no pod template');
});

test('a scrape annotation naming another port is reported', () => {
  const errors = errorsOf(brokenCopy('agones/gameserver.yaml', (t) => t.replace('prometheus.io/port: "7778"', 'prometheus.io/port: "7777"')));
  assertReported(errors, 'agones/gameserver.yaml', 'prometheus.io/port', '"7778"');
});

test('a wrong metric name in the dashboard fails the validation of deploy/', () => {
  const errors = errorsOf(brokenCopy('grafana/ecsnet-dashboard.json', (t) => t.replace('ecsnet_send_queue_bytes{', 'ecsnet_send_queue_size_bytes{')));
  assertReported(errors, 'grafana/ecsnet-dashboard.json', 'Send queue bytes', 'ecsnet_send_queue_size_bytes is not a metric');
});

test('the command line exits 0 on the real files and 1 with file, document and path on a break', () => {
  const ok = spawnSync(process.execPath, [path.join(here, 'validate.mjs'), '--crds', crdsDir], { encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /deploy validate: ok: \d+ files, \d+ documents/);
  const dir = brokenCopy('agones/gameserver.yaml', (t) => t.replace('protocol: TCP', 'protocol: TPC'));
  try {
    const bad = spawnSync(process.execPath, [path.join(here, 'validate.mjs'), '--crds', crdsDir, dir], { encoding: 'utf8' });
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /agones\/gameserver\.yaml#1 GameServer\/ecsnet- spec\.ports\[0\]\.protocol: must be equal to one of the allowed values/);
    assert.match(bad.stdout, /deploy validate: FAILED: .* [1-9]\d* errors/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a port protocol typo in the GameServer (TPC) is reported', () => {
  const errors = errorsOf(brokenCopy('agones/gameserver.yaml', (t) => t.replace('protocol: TCP', 'protocol: TPC')));
  assertReported(errors, 'agones/gameserver.yaml', 'spec.ports[0].protocol', '"TCP"');
});

test('a GameServer port without a protocol (Agones would make it UDP) is reported', () => {
  const errors = errorsOf(brokenCopy('agones/gameserver.yaml', (t) => t.replace(/(containerPort: 7779\n)\s+protocol: TCP\n/, '$1')));
  assertReported(errors, 'agones/gameserver.yaml', 'spec.ports[1].protocol', 'UDP');
});

test('a container without an image is reported (Deployment and Fleet)', () => {
  let errors = errorsOf(brokenCopy('kubernetes/deployment.yaml', (t) => t.replace(/\n\s+image: ecsnet:latest/, '')));
  assertReported(errors, 'kubernetes/deployment.yaml', 'spec.template.spec.containers[0].image', 'image');
  errors = errorsOf(brokenCopy('agones/fleet.yaml', (t) => t.replace(/\n\s+image: ecsnet:latest/, '')));
  assertReported(errors, 'agones/fleet.yaml', 'spec.template.spec.template.spec.containers[0].image', 'image');
});

test('a wrong field type in the Fleet is reported', () => {
  const errors = errorsOf(brokenCopy('agones/fleet.yaml', (t) => t.replace('replicas: 2', 'replicas: two')));
  assertReported(errors, 'agones/fleet.yaml', 'spec.replicas', 'must be integer');
});

test('a Service port given as a string is reported', () => {
  const errors = errorsOf(brokenCopy('kubernetes/service.yaml', (t) => t.replace('port: 7777', 'port: "7777"')));
  assertReported(errors, 'kubernetes/service.yaml', 'spec.ports[0].port', 'must be integer');
});

test('misspelt fields are reported (CRD schema, pod template, Service, allocation)', () => {
  let errors = errorsOf(brokenCopy('agones/gameserver.yaml', (t) => t.replace('portPolicy: Dynamic', 'portPolicyy: Dynamic')));
  assertReported(errors, 'agones/gameserver.yaml', 'spec.ports[0]', 'unknown field "portPolicyy"');
  errors = errorsOf(brokenCopy('kubernetes/deployment.yaml', (t) => t.replace('readinessProbe:', 'readynessProbe:')));
  assertReported(errors, 'kubernetes/deployment.yaml', 'spec.template.spec.containers[0]', 'unknown field "readynessProbe"');
  errors = errorsOf(brokenCopy('kubernetes/service.yaml', (t) => t.replace('externalTrafficPolicy:', 'externalTraficPolicy:')));
  assertReported(errors, 'kubernetes/service.yaml', 'spec.externalTraficPolicy', 'unknown field');
  errors = errorsOf(brokenCopy('agones/gameserverallocation.yaml', (t) => t.replace('gameServerState: Ready', 'gameServerState: Redy')));
  assertReported(errors, 'agones/gameserverallocation.yaml', 'spec.selectors[0].gameServerState', 'allowed values');
});

test('a grace period shorter than the drain, and an exposed admin port, are reported', () => {
  let errors = errorsOf(brokenCopy('agones/gameserver.yaml', (t) => t.replace('terminationGracePeriodSeconds: 75', 'terminationGracePeriodSeconds: 30')));
  assertReported(errors, 'agones/gameserver.yaml', 'terminationGracePeriodSeconds', 'ECSNET_DRAIN_SECONDS');
  errors = errorsOf(brokenCopy('agones/gameserver.yaml', (t) => t.replace('terminationGracePeriodSeconds: 75', 'terminationGracePeriodSeconds: 66')));
  assertReported(errors, 'agones/gameserver.yaml', 'terminationGracePeriodSeconds', "Agones' Shutdown()");
  errors = errorsOf(brokenCopy('kubernetes/service.yaml', (t) => `${t}    - name: admin\n      port: 7778\n      targetPort: admin\n      protocol: TCP\n`));
  assertReported(errors, 'kubernetes/service.yaml', 'spec.ports[2]', 'admin port');
});

test('a Fleet out of step with the GameServer, and an autoscaler naming no Fleet, are reported', () => {
  let errors = errorsOf(brokenCopy('agones/fleet.yaml', (t) => t.replace('periodSeconds: 5\n        failureThreshold: 3', 'periodSeconds: 6\n        failureThreshold: 3')));
  assertReported(errors, 'agones/fleet.yaml', 'spec.template.spec', 'differs');
  errors = errorsOf(brokenCopy('agones/fleetautoscaler.yaml', (t) => t.replace('fleetName: ecsnet', 'fleetName: ecsnett')));
  assertReported(errors, 'agones/fleetautoscaler.yaml', 'spec.fleetName', 'no Fleet');
});

test('a YAML syntax error is reported with its file', () => {
  const errors = errorsOf(brokenCopy('kubernetes/service.yaml', (t) => t.replace('  ports:\n', '  ports:\n   - [\n')));
  assertReported(errors, 'kubernetes/service.yaml', '(file)', 'YAML');
});

test('a StatefulSet with its state dir below the mounted volume passes', () => {
  const errors = errorsOf(brokenCopy('kubernetes/statefulset.yaml', (t) => t.replace(/(name: ECSNET_STATE_DIR\n\s+value: )\/var\/lib\/ecsnet\n/, '$1/var/lib/ecsnet/world-1\n')));
  assert.deepEqual(errors.map(formatError), []);
});

test('a persistent StatefulSet: short grace, unmounted state dir, misspelt fields, a journal without a state dir, a serviceName that is not headless', () => {
  const sts = 'kubernetes/statefulset.yaml';
  let errors = errorsOf(brokenCopy(sts, (t) => t.replace('terminationGracePeriodSeconds: 90', 'terminationGracePeriodSeconds: 70')));
  assertReported(errors, sts, 'spec.template.spec.terminationGracePeriodSeconds', 'for the last checkpoint (ECSNET_STATE_DIR)');
  errors = errorsOf(brokenCopy(sts, (t) => t.replace('mountPath: /var/lib/ecsnet', 'mountPath: /var/lib/ecsnet-state')));
  assertReported(errors, sts, 'spec.template.spec.containers[0].volumeMounts', 'ECSNET_STATE_DIR /var/lib/ecsnet is not on a writable volume');
  errors = errorsOf(brokenCopy(sts, (t) => t.replace(/(volumeClaimTemplates:\n(?:.*\n)*?\s+metadata:\n\s+)name: state\n/, '$1name: data\n')));
  assertReported(errors, sts, 'spec.template.spec.containers[0].volumeMounts', 'not on a writable volume');
  errors = errorsOf(brokenCopy(sts, (t) => t.replace('accessModes:', 'accesModes:')));
  assertReported(errors, sts, 'spec.volumeClaimTemplates[0].spec', 'unknown field "accesModes"');
  errors = errorsOf(brokenCopy(sts, (t) => t.replace('storage: 1Gi', 'storage: [1Gi]')));
  assertReported(errors, sts, 'spec.volumeClaimTemplates[0].spec.resources.requests.storage', 'must be string');
  errors = errorsOf(brokenCopy(sts, (t) => t.replace('volumeClaimTemplates:', 'volumeClaimTemplate:')));
  assertReported(errors, sts, 'spec.volumeClaimTemplate', 'unknown field');
  errors = errorsOf(brokenCopy(sts, (t) => t.replace('replicas: 1', 'replicas: one')));
  assertReported(errors, sts, 'spec.replicas', 'must be integer');
  errors = errorsOf(brokenCopy(sts, (t) => t.replace(/\n\s+- name: ECSNET_STATE_DIR\n\s+value: \/var\/lib\/ecsnet\n/, '\n')));
  assertReported(errors, sts, 'spec.template.spec.containers[0].env', 'ECSNET_JOURNAL needs ECSNET_STATE_DIR');
  errors = errorsOf(brokenCopy(sts, (t) => t.replace('serviceName: ecsnet-persistent-headless', 'serviceName: ecsnet-persistent')));
  assertReported(errors, sts, 'spec.serviceName', 'not headless');
});

test('a Service that selects the pods of several worlds is reported', () => {
  const errors = errorsOf(brokenCopy('kubernetes/service.yaml', (t) => t.replace(/\n\s+app\.kubernetes\.io\/instance: world-1.*\n/, '\n')));
  assertReported(errors, 'kubernetes/service.yaml', 'spec.selector', 'StatefulSet/ecsnet-persistent');
});

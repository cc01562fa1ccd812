#!/usr/bin/env node
// Validates every YAML document under deploy/ (except deploy/validate/) without a cluster:
//  - Agones GameServer, Fleet, FleetAutoscaler: against the openAPIV3Schema of the CRD that
//    defines their kind and apiVersion (./crds/, vendored from Agones, by default), with
//    unknown fields refused, as `kubectl apply` (server-side strict field validation) does;
//  - GameServerAllocation (no CRD: Agones' API server serves it): against the schema below,
//    written from Agones' examples/gameserverallocation.yaml (not authoritative);
//  - Deployment, StatefulSet, Service: with kubernetes-models' validators (types, required
//    fields, enums), plus unknown fields refused in the pod template (the GameServer CRD's
//    PodTemplateSpec schema), in a StatefulSet's volumeClaimTemplates (the PersistentVolumeClaim
//    template that schema embeds for ephemeral volumes) and in the specs (lists of the fields below);
//  - PodMonitor (Prometheus Operator): with @kubernetes-models/prometheus-operator's validator
//    (generated from the operator's CRD), plus unknown fields in its spec and endpoints;
//  - rules of ours: containers have an image, Agones ports say their protocol (the default is
//    UDP), terminationGracePeriodSeconds >= ECSNET_DRAIN_SECONDS + 5 (+ 3 under Agones), probes on the admin port
//    need ECSNET_ADMIN_BIND=0.0.0.0, no Service exposes the admin port 7778, the
//    FleetAutoscaler names a Fleet under deploy/, the Fleet's template spec is the GameServer's,
//    prometheus.io/* annotations name the admin port and /metrics, a PodMonitor selects pod
//    templates here and scrapes their port named "admin" (7778) at /metrics; with
//    ECSNET_STATE_DIR: the dir is a mounted volume, the grace period also covers the last
//    checkpoint, ECSNET_JOURNAL only with it; a StatefulSet's serviceName is a headless Service
//    here; a Service selects the pods of one workload at most (one world);
//  - the Grafana dashboard (deploy/grafana/*.json): dashboard.mjs, against metrics.json.
//
// Usage: node validate.mjs [--crds DIR] [DEPLOY_DIR]
//   DEPLOY_DIR: default the directory above this one. --crds (or AGONES_CRDS_DIR): default
//   ./crds (Agones b19d5fe78's CRDs, vendored: crds/README.md).
// Prints one line per error (file, document number, kind/name, path: message) and a summary;
// exits 1 on any error, 2 on bad usage or missing CRDs.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import yaml from 'js-yaml';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { Service } from 'kubernetes-models/v1/Service';
import { PodMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor';
import { dashboardErrors, listDashboards } from './dashboard.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const defaultDeployDir = path.resolve(here, '..');
export const defaultCrdsDir = path.resolve(here, 'crds');

const ADMIN_PORT = 7778;
// With ECSNET_STATE_DIR the server writes a last checkpoint at SIGTERM, after the drain and
// before its 5 s shutdown: it first waits for a checkpoint being written, then writes its own.
// Seconds the grace period must allow for that (docs/PERSISTENCE.md; measure
// ecsnet_checkpoint_seconds for a big world and give more).
export const CHECKPOINT_ALLOWANCE_SECONDS = 10;

const objectMetaSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', maxLength: 253, pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$' },
    generateName: { type: 'string', maxLength: 253 },
    namespace: { type: 'string' },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    annotations: { type: 'object', additionalProperties: { type: 'string' } },
  },
};

const labelSelectorSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    matchLabels: { type: 'object', additionalProperties: { type: 'string' } },
    matchExpressions: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['key', 'operator'],
        properties: {
          key: { type: 'string' },
          operator: { enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'] },
          values: { type: 'array', items: { type: 'string' } },
        },
      },
    },
  },
};

const int64 = { type: 'integer', minimum: 0 };
const priorities = {
  type: 'array',
  items: {
    type: 'object', additionalProperties: false, required: ['type', 'key'],
    properties: { type: { enum: ['Counter', 'List'] }, key: { type: 'string' }, order: { enum: ['Ascending', 'Descending'] } },
  },
};

// allocation.agones.dev/v1 GameServerAllocation, from Agones' examples/gameserverallocation.yaml
// (b19d5fe78) and its reference page: every field of the example, nothing more.
const gameServerAllocationSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['apiVersion', 'kind', 'spec'],
  properties: {
    apiVersion: { const: 'allocation.agones.dev/v1' },
    kind: { const: 'GameServerAllocation' },
    metadata: objectMetaSchema,
    spec: {
      type: 'object',
      additionalProperties: false,
      properties: {
        selectors: {
          type: 'array',
          minItems: 1,
          items: {
            type: 'object',
            additionalProperties: false,
            properties: {
              ...labelSelectorSchema.properties,
              gameServerState: { enum: ['Ready', 'Allocated'] },
              players: { type: 'object', additionalProperties: false, properties: { minAvailable: int64, maxAvailable: int64 } },
              counters: {
                type: 'object',
                additionalProperties: {
                  type: 'object', additionalProperties: false,
                  properties: { minCount: int64, maxCount: int64, minAvailable: int64, maxAvailable: int64 },
                },
              },
              lists: {
                type: 'object',
                additionalProperties: {
                  type: 'object', additionalProperties: false,
                  properties: { containsValue: { type: 'string' }, minAvailable: int64, maxAvailable: int64 },
                },
              },
            },
          },
        },
        scheduling: { enum: ['Packed', 'Distributed'] },
        metadata: {
          type: 'object', additionalProperties: false,
          properties: {
            labels: { type: 'object', additionalProperties: { type: 'string' } },
            annotations: { type: 'object', additionalProperties: { type: 'string' } },
          },
        },
        priorities,
        counters: {
          type: 'object',
          additionalProperties: {
            type: 'object', additionalProperties: false,
            properties: { action: { enum: ['Increment', 'Decrement'] }, amount: { type: 'integer', minimum: 1 }, capacity: int64 },
          },
        },
        lists: {
          type: 'object',
          additionalProperties: {
            type: 'object', additionalProperties: false,
            properties: {
              addValues: { type: 'array', items: { type: 'string' } },
              deleteValues: { type: 'array', items: { type: 'string' } },
              capacity: { type: 'integer', minimum: 0, maximum: 1000 },
            },
          },
        },
      },
    },
  },
};

// Fields kubernetes-models' validators accept silently when misspelt (they allow unknown
// properties): the Deployment, StatefulSet and Service specs' own (Kubernetes 1.3x API
// reference). A key's `[]` stands for every item of a list.
const knownFields = {
  Deployment: {
    '': ['apiVersion', 'kind', 'metadata', 'spec'],
    spec: ['minReadySeconds', 'paused', 'progressDeadlineSeconds', 'replicas', 'revisionHistoryLimit', 'selector', 'strategy', 'template'],
    'spec.strategy': ['type', 'rollingUpdate'],
  },
  StatefulSet: {
    '': ['apiVersion', 'kind', 'metadata', 'spec'],
    spec: ['minReadySeconds', 'ordinals', 'persistentVolumeClaimRetentionPolicy', 'podManagementPolicy', 'replicas',
      'revisionHistoryLimit', 'selector', 'serviceName', 'template', 'updateStrategy', 'volumeClaimTemplates'],
    'spec.updateStrategy': ['type', 'rollingUpdate'],
    'spec.updateStrategy.rollingUpdate': ['maxUnavailable', 'partition'],
    'spec.persistentVolumeClaimRetentionPolicy': ['whenDeleted', 'whenScaled'],
    'spec.ordinals': ['start'],
    'spec.volumeClaimTemplates[]': ['apiVersion', 'kind', 'metadata', 'spec'],
  },
  Service: {
    '': ['apiVersion', 'kind', 'metadata', 'spec'],
    spec: ['allocateLoadBalancerNodePorts', 'clusterIP', 'clusterIPs', 'externalIPs', 'externalName', 'externalTrafficPolicy',
      'healthCheckNodePort', 'internalTrafficPolicy', 'ipFamilies', 'ipFamilyPolicy', 'loadBalancerClass', 'loadBalancerIP',
      'loadBalancerSourceRanges', 'ports', 'publishNotReadyAddresses', 'selector', 'sessionAffinity', 'sessionAffinityConfig',
      'trafficDistribution', 'type'],
    'spec.ports[]': ['appProtocol', 'name', 'nodePort', 'port', 'protocol', 'targetPort'],
  },
  // Prometheus Operator v0.7x API reference, PodMonitorSpec and PodMetricsEndpoint.
  PodMonitor: {
    '': ['apiVersion', 'kind', 'metadata', 'spec'],
    spec: ['attachMetadata', 'bodySizeLimit', 'fallbackScrapeProtocol', 'jobLabel', 'keepDroppedTargets', 'labelLimit',
      'labelNameLengthLimit', 'labelValueLengthLimit', 'namespaceSelector', 'podMetricsEndpoints', 'podTargetLabels',
      'sampleLimit', 'scrapeClass', 'scrapeClassicHistograms', 'scrapeProtocols', 'selector', 'targetLimit'],
    'spec.podMetricsEndpoints[]': ['authorization', 'basicAuth', 'bearerTokenSecret', 'enableHttp2', 'filterRunning',
      'followRedirects', 'honorLabels', 'honorTimestamps', 'interval', 'metricRelabelings', 'oauth2', 'params', 'path',
      'port', 'portNumber', 'proxyUrl', 'relabelings', 'scheme', 'scrapeTimeout', 'targetPort', 'tlsConfig', 'trackTimestampsStaleness'],
  },
};

// A CRD schema as the API server applies it with strict field validation: an object schema
// that lists its properties refuses others unless it says x-kubernetes-preserve-unknown-fields.
// (Also: OpenAPI 3.0 keywords ajv reads differently, int-or-string as an anyOf.)
function strictify(node) {
  if (Array.isArray(node)) { node.forEach(strictify); return node; }
  if (!node || typeof node !== 'object') return node;
  for (const value of Object.values(node)) strictify(value);
  if (node.properties && node.additionalProperties === undefined && node['x-kubernetes-preserve-unknown-fields'] !== true) {
    node.additionalProperties = false;
  }
  // OpenAPI 3.0's boolean exclusiveMinimum/Maximum (draft 4) as draft 2019's numbers.
  for (const [flag, bound] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']]) {
    if (typeof node[flag] === 'boolean') {
      if (node[flag] && typeof node[bound] === 'number') { node[flag] = node[bound]; delete node[bound]; } else delete node[flag];
    }
  }
  if (node['x-kubernetes-int-or-string'] === true && !node.anyOf && !node.oneOf && !node.type) {
    node.anyOf = [{ type: 'integer' }, { type: 'string' }];
  }
  return node;
}

function makeAjv() {
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv); // date-time, byte, int32, int64, ...
  ajv.addFormat('int-or-string', true); // the anyOf next to it checks the type
  return ajv;
}

// { 'agones.dev/v1 GameServer': schema, ... } from every CRD under dir.
export function loadCrdSchemas(dir) {
  const schemas = {};
  for (const file of fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort()) {
    for (const doc of yaml.loadAll(fs.readFileSync(path.join(dir, file), 'utf8'))) {
      if (!doc || doc.kind !== 'CustomResourceDefinition') continue;
      for (const version of doc.spec.versions ?? []) {
        const schema = version.schema?.openAPIV3Schema;
        if (!schema) continue;
        schemas[`${doc.spec.group}/${version.name} ${doc.spec.names.kind}`] = { schema, file };
      }
    }
  }
  return schemas;
}

function rootSchema(crdSchema, apiVersion, kind) {
  const schema = strictify(structuredClone(crdSchema));
  schema.properties = {
    apiVersion: { const: apiVersion },
    kind: { const: kind },
    metadata: objectMetaSchema,
    ...schema.properties,
  };
  schema.required = [...new Set(['apiVersion', 'kind', ...(schema.required ?? [])])];
  return schema;
}

function ajvErrors(errors, prefix = '') {
  return (errors ?? []).map((e) => {
    let message = e.message;
    if (e.keyword === 'additionalProperties') message = `unknown field "${e.params.additionalProperty}"`;
    if (e.keyword === 'enum') message += `: ${e.params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    if (e.keyword === 'const') message += `: ${JSON.stringify(e.params.allowedValue)}`;
    return { path: pointerToPath(prefix + e.instancePath), message };
  });
}

function pointerToPath(pointer) {
  if (!pointer) return '(document)';
  return pointer.split('/').slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((s, p) => (/^\d+$/.test(p) ? `${s}[${p}]` : s ? `${s}.${p}` : p), '');
}

function listYamlFiles(dir) {
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name === 'validate' || entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
      out.push(...listYamlFiles(full));
    } else if (/\.ya?ml$/.test(entry.name)) {
      out.push(full);
    }
  }
  return out;
}

// Pod templates of a document: [{ path, template }] (GameServer, Fleet, Deployment, StatefulSet).
function podTemplates(doc) {
  switch (doc.kind) {
    case 'GameServer': return [{ path: 'spec.template', template: doc.spec?.template, agones: doc.spec }];
    case 'Fleet': return [{ path: 'spec.template.spec.template', template: doc.spec?.template?.spec?.template, agones: doc.spec?.template?.spec }];
    case 'Deployment': return [{ path: 'spec.template', template: doc.spec?.template }];
    case 'StatefulSet': return [{ path: 'spec.template', template: doc.spec?.template, claims: doc.spec?.volumeClaimTemplates }];
    default: return [];
  }
}

// Whether a selector's labels (all of them, at least one) are on a pod template.
function selects(matchLabels, template) {
  const wanted = Object.entries(matchLabels ?? {});
  return wanted.length > 0 && wanted.every(([k, v]) => template?.metadata?.labels?.[k] === v);
}

function envValue(container, name) {
  const entry = (container.env ?? []).find((e) => e && e.name === name);
  return entry && typeof entry.value === 'string' ? entry.value : undefined;
}

function ruleErrors(doc) {
  const errors = [];
  for (const { path: at, template, agones, claims } of podTemplates(doc)) {
    const spec = template?.spec;
    if (!spec || typeof spec !== 'object') continue;
    const containers = Array.isArray(spec.containers) ? spec.containers : [];
    containers.forEach((c, i) => {
      if (!c || typeof c !== 'object') return;
      const where = `${at}.spec.containers[${i}]`;
      if (typeof c.image !== 'string' || c.image.trim() === '') {
        errors.push({ path: `${where}.image`, message: 'a container needs an image (the API server refuses a pod template without one)' });
      }
      // After the drain: the last checkpoint (with a state dir), the shutdown (at most 5 s,
      // docs/SERVER.md), then under Agones the Shutdown() call to the sidecar (at most 3 s, run.cpp).
      const drain = envValue(c, 'ECSNET_DRAIN_SECONDS');
      const stateDir = envValue(c, 'ECSNET_STATE_DIR');
      if (drain !== undefined || stateDir !== undefined) {
        const grace = spec.terminationGracePeriodSeconds ?? 30;
        const parts = [...(drain !== undefined ? [[Number(drain), `ECSNET_DRAIN_SECONDS (${drain})`]] : []),
          ...(stateDir !== undefined ? [[CHECKPOINT_ALLOWANCE_SECONDS, `${CHECKPOINT_ALLOWANCE_SECONDS} s for the last checkpoint (ECSNET_STATE_DIR)`]] : []),
          [5, "the server's 5 s shutdown"], ...(agones ? [[3, "3 s for Agones' Shutdown()"]] : [])];
        if (!(Number(grace) >= parts.reduce((sum, [s]) => sum + s, 0))) {
          errors.push({ path: `${at}.spec.terminationGracePeriodSeconds`, message: `${grace} s is less than ${parts.map(([, what]) => what).join(' + ')}` });
        }
      }
      if (stateDir !== undefined) {
        // The state must outlive the container: on a volume of the pod (a claim template's for a
        // StatefulSet), mounted writable at exactly that path (readOnlyRootFilesystem would
        // refuse it anyway, and a path below the mount is fine).
        const volumes = new Set([...(spec.volumes ?? []).map((v) => v?.name), ...(claims ?? []).map((t) => t?.metadata?.name)]);
        const dir = stateDir.replace(/\/+$/, '');
        const mounted = (c.volumeMounts ?? []).some((m) => m && m.readOnly !== true && volumes.has(m.name)
          && typeof m.mountPath === 'string' && (dir + '/').startsWith(m.mountPath.replace(/\/+$/, '') + '/'));
        if (!mounted) {
          errors.push({ path: `${where}.volumeMounts`, message: `ECSNET_STATE_DIR ${stateDir} is not on a writable volume mounted in the container: the world would be lost with the container` });
        }
      }
      if (envValue(c, 'ECSNET_JOURNAL') !== undefined && stateDir === undefined) {
        errors.push({ path: `${where}.env`, message: 'ECSNET_JOURNAL needs ECSNET_STATE_DIR (the server refuses to start without it)' });
      }
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
        const port = c[probe]?.httpGet?.port;
        const onAdmin = port === ADMIN_PORT || (typeof port === 'string' && (c.ports ?? []).some((p) => p?.name === port && p?.containerPort === ADMIN_PORT));
        if (onAdmin && envValue(c, 'ECSNET_ADMIN_BIND') !== '0.0.0.0') {
          errors.push({ path: `${where}.${probe}.httpGet.port`, message: 'an httpGet probe on the admin port needs ECSNET_ADMIN_BIND=0.0.0.0 (the image binds it to 127.0.0.1)' });
        }
      }
    });
  }
  for (const { path: at, template } of podTemplates(doc)) {
    const annotations = template?.metadata?.annotations ?? {};
    const expected = { 'prometheus.io/port': String(ADMIN_PORT), 'prometheus.io/path': '/metrics' };
    if (annotations['prometheus.io/scrape'] === undefined) continue;
    for (const [key, value] of Object.entries(expected)) {
      if (annotations[key] !== value) {
        errors.push({ path: `${at}.metadata.annotations["${key}"]`, message: `must be "${value}" (the admin endpoint's /metrics)` });
      }
    }
  }
  for (const { path: at, agones } of podTemplates(doc)) {
    if (!agones || !Array.isArray(agones.ports)) continue;
    const base = at.replace(/\.template$/, '');
    agones.ports.forEach((p, i) => {
      if (p && typeof p === 'object' && p.protocol === undefined) {
        errors.push({ path: `${base}.ports[${i}].protocol`, message: 'missing: Agones defaults a port to UDP; ecsnet needs TCP' });
      }
      if (p && p.containerPort === ADMIN_PORT) {
        errors.push({ path: `${base}.ports[${i}].containerPort`, message: 'the admin port 7778 must not be a GameServer port (it would get a public hostPort)' });
      }
    });
  }
  if (doc.kind === 'Service' && Array.isArray(doc.spec?.ports)) {
    doc.spec.ports.forEach((p, i) => {
      if (p && (p.port === ADMIN_PORT || p.targetPort === ADMIN_PORT || p.targetPort === 'admin')) {
        errors.push({ path: `spec.ports[${i}]`, message: 'the admin port 7778 (no authentication) must not be exposed by a Service' });
      }
    });
  }
  return errors;
}

// The values at a knownFields key: [[path, value]], a `[]` part expanding every item of a list.
function valuesAt(doc, where) {
  let found = [['', doc]];
  for (const part of where ? where.split('.') : []) {
    const isList = part.endsWith('[]');
    const key = isList ? part.slice(0, -2) : part;
    found = found.flatMap(([at, value]) => {
      const next = value?.[key];
      const nextAt = at ? `${at}.${key}` : key;
      if (!isList) return [[nextAt, next]];
      return Array.isArray(next) ? next.map((v, i) => [`${nextAt}[${i}]`, v]) : [];
    });
  }
  return found;
}

function unknownFieldErrors(doc) {
  const errors = [];
  const lists = knownFields[doc.kind];
  if (!lists) return errors;
  for (const [where, allowed] of Object.entries(lists)) {
    for (const [at, obj] of valuesAt(doc, where)) {
      if (!obj || typeof obj !== 'object' || Array.isArray(obj)) continue;
      for (const key of Object.keys(obj)) {
        if (!allowed.includes(key)) errors.push({ path: at ? `${at}.${key}` : key, message: `unknown field "${key}"` });
      }
    }
  }
  return errors;
}

function coreErrors(doc, Model) {
  try {
    new Model(doc).validate();
    return [];
  } catch (e) {
    if (Array.isArray(e.errors)) return ajvErrors(e.errors);
    return [{ path: '(document)', message: String(e.message ?? e) }];
  }
}

const cache = new Map();

export function validate({ deployDir = defaultDeployDir, crdsDir = defaultCrdsDir } = {}) {
  if (!fs.existsSync(crdsDir)) {
    throw new Error(`Agones CRDs not found in ${crdsDir} (give --crds DIR or AGONES_CRDS_DIR)`);
  }
  // Loading and compiling the CRD schemas takes about a second: once per directory per process.
  if (!cache.has(crdsDir)) cache.set(crdsDir, { crds: loadCrdSchemas(crdsDir), ajv: makeAjv(), compiled: new Map() });
  const { crds, ajv, compiled } = cache.get(crdsDir);
  const compile = (key, make) => {
    if (!compiled.has(key)) compiled.set(key, ajv.compile(make()));
    return compiled.get(key);
  };
  const gameServerCrd = crds['agones.dev/v1 GameServer'];
  const podTemplateSchema = gameServerCrd?.schema.properties.spec.properties.template;
  const podTemplateValidator = podTemplateSchema
    ? compile('PodTemplateSpec', () => strictify(structuredClone(podTemplateSchema)))
    : null;
  // A StatefulSet's volumeClaimTemplates: the PersistentVolumeClaimTemplate (metadata, spec) of
  // the pod template's ephemeral volumes, the same Kubernetes type.
  const claimSchema = podTemplateSchema?.properties?.spec?.properties?.volumes?.items?.properties?.ephemeral?.properties?.volumeClaimTemplate;
  const claimValidator = claimSchema ? compile('PersistentVolumeClaimTemplate', () => strictify(structuredClone(claimSchema))) : null;

  const errors = [];
  const kinds = {};
  const seen = []; // { file, index, doc } of every object, for the cross-document rules
  const files = listYamlFiles(deployDir);
  for (const file of files) {
    const rel = path.relative(deployDir, file) || path.basename(file);
    let docs;
    try {
      docs = yaml.loadAll(fs.readFileSync(file, 'utf8'));
    } catch (e) {
      errors.push({ file: rel, doc: 0, path: '(file)', message: `YAML: ${e.message.split('\n')[0]}` });
      continue;
    }
    docs.forEach((doc, i) => {
      if (doc === null || doc === undefined) return;
      const report = (list) => list.forEach((e) => errors.push({ file: rel, doc: i + 1, name: `${doc.kind}/${doc.metadata?.name ?? doc.metadata?.generateName ?? '?'}`, ...e }));
      if (typeof doc !== 'object' || Array.isArray(doc) || typeof doc.kind !== 'string' || typeof doc.apiVersion !== 'string') {
        report([{ path: '(document)', message: 'not a Kubernetes object (apiVersion and kind strings)' }]);
        return;
      }
      kinds[doc.kind] = (kinds[doc.kind] ?? 0) + 1;
      seen.push({ file: rel, index: i + 1, doc });
      const key = `${doc.apiVersion} ${doc.kind}`;
      if (crds[key]) {
        const check = compile(key, () => rootSchema(crds[key].schema, doc.apiVersion, doc.kind));
        if (!check(doc)) report(ajvErrors(check.errors));
      } else if (key === 'allocation.agones.dev/v1 GameServerAllocation') {
        const check = compile(key, () => gameServerAllocationSchema);
        if (!check(doc)) report(ajvErrors(check.errors));
      } else if (key === 'monitoring.coreos.com/v1 PodMonitor') {
        report(coreErrors(doc, PodMonitor));
        report(unknownFieldErrors(doc));
      } else if (key === 'apps/v1 Deployment' || key === 'apps/v1 StatefulSet' || key === 'v1 Service') {
        report(coreErrors(doc, { Deployment, StatefulSet, Service }[doc.kind]));
        report(unknownFieldErrors(doc));
        if (doc.kind !== 'Service' && podTemplateValidator && doc.spec?.template && !podTemplateValidator(doc.spec.template)) {
          report(ajvErrors(podTemplateValidator.errors, '/spec/template'));
        }
        if (doc.kind === 'StatefulSet' && claimValidator && Array.isArray(doc.spec?.volumeClaimTemplates)) {
          doc.spec.volumeClaimTemplates.forEach((claim, i) => {
            if (!claim || typeof claim !== 'object') return;
            const { apiVersion, kind, ...template } = claim; // checked by the field list above
            if (!claimValidator(template)) report(ajvErrors(claimValidator.errors, `/spec/volumeClaimTemplates/${i}`));
          });
        }
      } else {
        report([{ path: 'kind', message: `no schema for ${key} (Agones CRDs in ${crdsDir}, GameServerAllocation, Deployment, StatefulSet, Service, PodMonitor)` }]);
        return;
      }
      report(ruleErrors(doc));
    });
  }

  // Cross-document rules.
  const fleets = seen.filter((s) => s.doc.kind === 'Fleet');
  for (const s of seen.filter((s) => s.doc.kind === 'FleetAutoscaler')) {
    const name = s.doc.spec?.fleetName;
    if (!fleets.some((f) => f.doc.metadata?.name === name)) {
      errors.push({ file: s.file, doc: s.index, name: `FleetAutoscaler/${s.doc.metadata?.name}`, path: 'spec.fleetName', message: `no Fleet named "${name}" under deploy/` });
    }
  }
  for (const s of seen.filter((s) => s.doc.kind === 'PodMonitor')) {
    const name = `PodMonitor/${s.doc.metadata?.name}`;
    const wanted = s.doc.spec?.selector?.matchLabels ?? {};
    const selected = seen.flatMap((o) => podTemplates(o.doc)).map((t) => t.template).filter((t) => selects(wanted, t));
    if (selected.length === 0) {
      errors.push({ file: s.file, doc: s.index, name, path: 'spec.selector.matchLabels', message: 'selects no pod template under deploy/' });
    }
    (s.doc.spec?.podMetricsEndpoints ?? []).forEach((e, i) => {
      const at = `spec.podMetricsEndpoints[${i}]`;
      if (e?.path !== '/metrics') errors.push({ file: s.file, doc: s.index, name, path: `${at}.path`, message: 'must be /metrics' });
      const adminPort = (t) => (t?.spec?.containers ?? []).some((c) => (c?.ports ?? []).some((p) => p?.name === e?.port && p?.containerPort === ADMIN_PORT));
      if (selected.length > 0 && !selected.every(adminPort)) {
        errors.push({ file: s.file, doc: s.index, name, path: `${at}.port`, message: `"${e?.port}" is not the name of the admin port ${ADMIN_PORT} in every selected pod template` });
      }
    });
  }
  // A Service in front of two workloads' pods would spread one address's players over worlds
  // that do not share anything (a Fleet and its GameServer count as one: the same pods).
  for (const s of seen.filter((s) => s.doc.kind === 'Service')) {
    const workloads = seen.filter((o) => o.doc.kind !== 'GameServer' || !seen.some((f) => f.doc.kind === 'Fleet'))
      .filter((o) => podTemplates(o.doc).some((t) => selects(s.doc.spec?.selector, t.template)))
      .map((o) => `${o.doc.kind}/${o.doc.metadata?.name ?? o.doc.metadata?.generateName} (${o.file})`);
    if (workloads.length > 1) {
      errors.push({ file: s.file, doc: s.index, name: `Service/${s.doc.metadata?.name}`, path: 'spec.selector', message: `selects the pods of ${workloads.length} workloads (${workloads.join(', ')}): one Service, one world (add an instance label)` });
    }
  }
  for (const s of seen.filter((s) => s.doc.kind === 'StatefulSet')) {
    const name = s.doc.spec?.serviceName;
    if (name === undefined) continue; // optional in kubernetes-models' schema (no per-pod DNS name then)
    const service = seen.find((o) => o.doc.kind === 'Service' && o.doc.metadata?.name === name);
    const problem = !service ? `no Service named "${name}" under deploy/`
      : service.doc.spec?.clusterIP !== 'None' ? `the Service "${name}" is not headless (clusterIP: None)`
        : !selects(service.doc.spec?.selector, s.doc.spec?.template) ? `the Service "${name}" does not select this StatefulSet's pods` : null;
    if (problem) errors.push({ file: s.file, doc: s.index, name: `StatefulSet/${s.doc.metadata?.name}`, path: 'spec.serviceName', message: problem });
  }
  const gameServers = seen.filter((s) => s.doc.kind === 'GameServer');
  if (gameServers.length === 1) {
    for (const f of fleets) {
      if (!isDeepStrictEqual(f.doc.spec?.template?.spec, gameServers[0].doc.spec)) {
        errors.push({ file: f.file, doc: f.index, name: `Fleet/${f.doc.metadata?.name}`, path: 'spec.template.spec', message: `differs from the GameServer's spec in ${gameServers[0].file} (keep them in step)` });
      }
    }
  }
  const dashboards = listDashboards(deployDir);
  for (const file of dashboards) {
    const rel = path.relative(deployDir, file);
    for (const e of dashboardErrors(file)) errors.push({ file: rel, doc: 0, ...e });
  }
  return { files: files.length, documents: seen.length, kinds, dashboards: dashboards.length, errors };
}

export function formatError(e) {
  return `${e.file}#${e.doc}${e.name ? ` ${e.name}` : ''} ${e.path}: ${e.message}`;
}

function main(argv) {
  let crdsDir = process.env.AGONES_CRDS_DIR || defaultCrdsDir;
  let deployDir = defaultDeployDir;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--crds' && argv[i + 1]) crdsDir = path.resolve(argv[++i]);
    else if (argv[i] === '-h' || argv[i] === '--help') {
      console.log('usage: node validate.mjs [--crds DIR] [DEPLOY_DIR]');
      return 0;
    } else if (!argv[i].startsWith('-')) deployDir = path.resolve(argv[i]);
    else { console.error(`validate.mjs: unknown argument ${argv[i]}`); return 2; }
  }
  let result;
  try {
    result = validate({ deployDir, crdsDir });
  } catch (e) {
    console.error(`deploy validate: ${e.message}`);
    return 2;
  }
  for (const e of result.errors) console.error(formatError(e));
  const kinds = Object.entries(result.kinds).map(([k, n]) => `${n} ${k}`).join(', ');
  console.log(`deploy validate: ${result.errors.length ? 'FAILED' : 'ok'}: ${result.files} files, ${result.documents} documents (${kinds}), ${result.dashboards} dashboards, ${result.errors.length} errors`);
  return result.errors.length ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}

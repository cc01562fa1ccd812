// Client-side prediction in the browser (docs/PREDICTION.md, "In the browser"): the C++ SDK's
// own prediction (shared/client prediction.hpp) with the game's predicted systems, compiled to
// WebAssembly by ecsnet_add_prediction_module, behind the C++ names. The module keeps its own
// mirror of the server's frames (the session hands it each one), its ring of states, the
// quantization-aware comparison, the replay budget, smoothing and predicted spawns: the same
// code as a native client, so nothing here re-implements them. State crosses in bulk: frames
// and inputs in, one array of rendered values and one of events out per update.
import type { Entity } from './messages';
import { type ComponentInfo, type FixedValue, FieldType, type Schema } from './schema';

// What Emscripten's factory (MODULARIZE, EXPORT_NAME createPredictionModule) resolves to.
export interface PredictionModule {
  HEAPU8: Uint8Array;
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  _ecsnet_configure(config: number, options: number, count: number): number;
  _ecsnet_frame_buffer(bytes: number): number;
  _ecsnet_receive(bytes: number): number;
  _ecsnet_error(): number;
  _ecsnet_track(index: number, version: number): number;
  _ecsnet_untrack(index: number, version: number): void;
  _ecsnet_input_value(type: number, bytes: number, size: number): number;
  _ecsnet_set_input(tick: number, index: number, version: number): number;
  _ecsnet_update(inputTick: number, elapsedSeconds: number): number;
  _ecsnet_types_json(): number;
  _ecsnet_view(count: number): number;
  _ecsnet_events(count: number): number;
  _ecsnet_stats(): number;
  UTF8ToString(ptr: number): string;
  stringToUTF8(text: string, ptr: number, bytes: number): void;
  lengthBytesUTF8(text: string): number;
}
// The factory: in a page `createPredictionModule({ locateFile: () => wasmUrl })`, in Node
// `factory({ wasmBinary })` (Node 20's fetch cannot read a file).
export type PredictionModuleFactory = (overrides?: Record<string, unknown>) => Promise<PredictionModule>;

// prediction_options, in the C++ names' camelCase; unset ones keep the C++ defaults.
export interface PredictionOptions {
  config?: string;            // the game's text for its declare_prediction (the arena: "size=4000")
  historyTicks?: number;      // 64
  toleranceSteps?: number;    // 1
  replayBudgetTicks?: number; // 32
  replayBudgetMs?: number;    // 4
  halfLifeMs?: number;        // 100
  snapDistance?: number;      // 64
  spawnConfirmTicks?: number; // 8
}
const OPTION_ORDER: (keyof PredictionOptions)[] = [
  'historyTicks', 'toleranceSteps', 'replayBudgetTicks', 'replayBudgetMs', 'halfLifeMs', 'snapDistance', 'spawnConfirmTicks',
];

export interface PredictionStats {
  ticksPredicted: number;
  checks: number;
  mispredictions: number;
  ticksReplayed: number;
  replaysDeferred: number;
  tooOld: number;
  adopted: number;
  snaps: number;
  systemFailures: number;
  largestError: number;
  spawnsPredicted: number;
  spawnsMatched: number;
  spawnsRefused: number;
  inputsCorrected: number; // ticks the server ran on an older input than the one set (its acks)
}
const STAT_ORDER: (keyof PredictionStats)[] = [
  'ticksPredicted', 'checks', 'mispredictions', 'ticksReplayed', 'replaysDeferred', 'tooOld', 'adopted', 'snaps',
  'systemFailures', 'largestError', 'spawnsPredicted', 'spawnsMatched', 'spawnsRefused',
];

export interface Misprediction {
  tick: number;
  entity: Entity; // the server's
  type: string;   // the first predicted type that disagreed
  error: number;  // the distance between the two values' float fields
}
export interface PredictedSpawn {
  id: number;            // the same from the tick it is made until matched or refused
  tick: number;          // the tick it was made in
  server: Entity | null; // the server's entity once matched
}
export type SpawnRefusal = 'unconfirmed' | 'undone';

export interface DeclaredType {
  name: string;
  replicated: boolean;
  input: boolean;
  fields: number;
}

// One record of the module's view: a tracked entity or a pending spawn, its values by type.
interface Record_ {
  values: (FixedValue | undefined)[]; // by replicated declared type
}

export class Prediction {
  onMisprediction: ((m: Misprediction) => void) | null = null;
  onSpawnMatched: ((spawn: PredictedSpawn) => void) | null = null;
  onSpawnRefused: ((spawn: PredictedSpawn, reason: SpawnRefusal) => void) | null = null;

  private readonly module: PredictionModule;
  private readonly scratch: number; // a size_t the view and events calls write their counts to
  private schema: Schema | null = null;
  private types: DeclaredType[] = [];
  private infos: (ComponentInfo | null)[] = []; // by declared type: the server's, if replicated
  private tracked_ = new Map<number, { entity: Entity; record: Record_ }>(); // by index
  private pending: { spawn: PredictedSpawn; record: Record_ }[] = [];
  private stats_: PredictionStats;
  private tick_ = 0;
  private worldTick_ = 0;
  private failures_ = 0;

  // Instantiates the module (its factory and what it needs to find its .wasm) and configures it.
  static async load(factory: PredictionModuleFactory, overrides: Record<string, unknown> = {},
                    options: PredictionOptions = {}): Promise<Prediction> {
    return new Prediction(await factory(overrides), options);
  }

  // A module instance holds one prediction: give each Prediction its own.
  constructor(module: PredictionModule, options: PredictionOptions = {}) {
    this.module = module;
    this.scratch = module._malloc(8);
    this.stats_ = { ...Object.fromEntries(STAT_ORDER.map((k) => [k, 0])), inputsCorrected: 0 } as unknown as PredictionStats;
    const values = OPTION_ORDER.map((k) => {
      const v = options[k];
      if (v !== undefined && typeof v !== 'number') throw new TypeError(`prediction option ${k} is a number`);
      return v ?? NaN;
    });
    const at = module._malloc(values.length * 8);
    new Float64Array(module.HEAPU8.buffer, at, values.length).set(values);
    const config = options.config ?? '';
    const size = module.lengthBytesUTF8(config) + 1;
    const text = module._malloc(size);
    module.stringToUTF8(config, text, size);
    const ok = module._ecsnet_configure(text, at, values.length);
    module._free(text);
    module._free(at);
    if (!ok) throw new RangeError(`prediction options: ${this.error}`);
  }

  // ---- fed by the session (or a test) ----------------------------------------------------------------

  // Each server frame, as it arrived (its length prefix included), every one in order: the
  // frame after a Delta tells that its tick is whole (its owner-only Delta in), and the
  // prediction compares a tick only then. Welcome starts a new prediction with `schema` (the
  // Welcome's types, which the session decoded). False when the module refused the frame
  // (error says why): its mirror then waits for a snapshot, as the session's does.
  receive(frame: Uint8Array, schema?: Schema): boolean {
    const m = this.module;
    m.HEAPU8.set(frame, m._ecsnet_frame_buffer(frame.length));
    if (schema !== undefined) this.restart(schema);
    const ok = m._ecsnet_receive(frame.length) !== 0;
    if (schema !== undefined) this.describe();
    if (!ok) ++this.failures_;
    return ok;
  }

  // Starts predicting a server entity (the player's own); false when the module has no
  // prediction yet or its mirror lacks the entity.
  track(e: Entity): boolean { return this.module._ecsnet_track(e.index, e.version) !== 0; }
  untrack(e: Entity): void {
    this.module._ecsnet_untrack(e.index, e.version);
    this.tracked_.delete(e.index);
  }
  tracks(e: Entity): boolean { return this.tracked_.get(e.index)?.entity.version === e.version; }
  get size(): number { return this.tracked_.size + this.pending.length; }

  // The input values for `tick` (newer than tick), as the Input carries them: each input type's
  // canonical bytes (schema.ts makeValue).
  setInput(tick: number, e: Entity, values: readonly { type: number; bytes: Uint8Array }[]): void {
    const m = this.module;
    for (const v of values) {
      const at = m._malloc(Math.max(v.bytes.length, 1));
      m.HEAPU8.set(v.bytes, at);
      const ok = m._ecsnet_input_value(v.type, at, v.bytes.length);
      m._free(at);
      if (!ok) throw new TypeError(this.error);
    }
    if (!m._ecsnet_set_input(tick, e.index, e.version)) throw new Error(this.error);
  }

  // A frame: reconcile with the newest server tick, predict up to inputTick (0: not yet), decay
  // the smoothing by the rendered time elapsed. Events fire in here.
  update(inputTick: number, elapsedSeconds: number): void {
    const m = this.module;
    if (!m._ecsnet_update(inputTick, elapsedSeconds)) {
      this.tracked_.clear();
      this.pending = [];
      return;
    }
    this.readStats();
    this.readView();
    this.fireEvents();
  }

  // ---- rendering ------------------------------------------------------------------------------------

  // The value to draw of `type` (a name or wire id) for a tracked entity or a pending spawn: the
  // prediction at tick, plus what is left of a correction's offset. Undefined when not predicted.
  rendered<T extends object = FixedValue>(target: Entity | PredictedSpawn, type: string | number): T | undefined {
    const record = 'id' in target ? this.pending.find((p) => p.spawn.id === target.id)?.record
      : this.tracked_.get(target.index)?.entity.version === target.version ? this.tracked_.get(target.index)!.record : undefined;
    if (record === undefined) return undefined;
    const k = this.infos.findIndex((info) => info !== null && (info.name === type || info.id === type));
    return record.values[k] as T | undefined;
  }
  // The spawns the server has not matched yet, in the order made (a matched one is the
  // server's entity: draw that).
  spawnsPending(): PredictedSpawn[] { return this.pending.map((p) => p.spawn); }
  // The server entities tracked (matched spawns included).
  tracked(): Entity[] { return [...this.tracked_.values()].map((t) => t.entity); }

  get stats(): Readonly<PredictionStats> { return this.stats_; }
  // The newest predicted tick, and the tick the world holds (behind while a replay waits).
  get tick(): number { return this.tick_; }
  get worldTick(): number { return this.worldTick_; }
  get replaying(): boolean { return this.worldTick_ < this.tick_; }
  // The types the game declared, in order.
  declaredTypes(): readonly DeclaredType[] { return this.types; }
  // Frames the module refused (a malformed or inconsistent one) since it was made.
  get refusedFrames(): number { return this.failures_; }
  get error(): string { return this.module.UTF8ToString(this.module._ecsnet_error()); }

  // ---- the module's arrays -----------------------------------------------------------------------------

  private restart(schema: Schema): void {
    this.schema = schema;
    this.tracked_.clear();
    this.pending = [];
  }

  private describe(): void {
    this.types = JSON.parse(this.module.UTF8ToString(this.module._ecsnet_types_json())) as DeclaredType[];
    this.infos = this.types.map((t) => {
      if (!t.replicated) return null;
      const info = this.schema?.find(t.name);
      if (info === undefined) throw new TypeError(`the prediction module predicts '${t.name}', which the server does not have`);
      if (info.fields.length !== t.fields) {
        throw new TypeError(`the prediction module's ${t.name} has ${t.fields} fields, the server's ${info.fields.length}: ` +
          'the module was built with other types than the server');
      }
      return info;
    });
  }

  private doubles(ptr: number, count: number): Float64Array {
    // After the call: memory may have grown and moved the buffer.
    return new Float64Array(this.module.HEAPU8.buffer, ptr, count);
  }

  private count(): number { return new Uint32Array(this.module.HEAPU8.buffer, this.scratch, 1)[0]!; }

  private readStats(): void {
    const s = this.doubles(this.module._ecsnet_stats(), 17);
    STAT_ORDER.forEach((k, i) => { this.stats_[k] = s[i]!; });
    this.tick_ = s[13]!;
    this.worldTick_ = s[14]!;
    this.stats_.inputsCorrected = s[16]!;
  }

  private readView(): void {
    const ptr = this.module._ecsnet_view(this.scratch);
    const v = this.doubles(ptr, this.count());
    const tracked = new Map<number, { entity: Entity; record: Record_ }>();
    const pending: { spawn: PredictedSpawn; record: Record_ }[] = [];
    let at = 0;
    while (at < v.length) {
      const kind = v[at]!;
      const a = v[at + 1]!;
      const b = v[at + 2]!;
      at += 4;
      const values: (FixedValue | undefined)[] = [];
      this.infos.forEach((info, k) => {
        if (info === null) return;
        const present = v[at] !== 0;
        values[k] = present ? fieldsOf(info, v, at + 1) : undefined;
        at += 1 + this.types[k]!.fields;
      });
      if (kind === 0) tracked.set(a, { entity: { index: a, version: b }, record: { values } });
      else pending.push({ spawn: { id: a, tick: b, server: null }, record: { values } });
    }
    this.tracked_ = tracked;
    this.pending = pending;
  }

  private fireEvents(): void {
    const ptr = this.module._ecsnet_events(this.scratch);
    const e = this.doubles(ptr, this.count()).slice(); // events may call back into the module
    for (let at = 0; at + 6 <= e.length; at += 6) {
      const kind = e[at];
      if (kind === 1) {
        const type = this.types[e[at + 4]!]?.name ?? '';
        this.onMisprediction?.({ tick: e[at + 1]!, entity: { index: e[at + 2]!, version: e[at + 3]! }, type, error: e[at + 5]! });
      } else if (kind === 2) {
        this.onSpawnMatched?.({ id: e[at + 1]!, tick: e[at + 2]!, server: { index: e[at + 3]!, version: e[at + 4]! } });
      } else if (kind === 3) {
        this.onSpawnRefused?.({ id: e[at + 1]!, tick: e[at + 2]!, server: null }, e[at + 3] === 1 ? 'undone' : 'unconfirmed');
      }
    }
  }
}

// A value's fields from the module's numbers, typed as readValue types them.
function fieldsOf(info: ComponentInfo, v: Float64Array, at: number): FixedValue {
  const out: FixedValue = {};
  info.fields.forEach((f, i) => {
    const x = v[at + i]!;
    out[f.name] = f.type === FieldType.Bool ? x !== 0 : f.type === FieldType.Long || f.type === FieldType.ULong ? BigInt(x) : x;
  });
  return out;
}

// A game's connection to ecsnet-server, with the C++ SDK's design (shared/client session.hpp,
// docs/CLIENT.md): update(), called once per frame (or by a timer with `autoUpdate`), applies
// what arrived, fires the events, and sends the due input and a Ping now and then. A lost
// connection is resumed with Welcome's resume key. Events run inside update(); they may read
// the session and call its methods, but not update().
import { ChecksumHasher } from './checksum';
import { CommandError, ConnectionLostError } from './errors';
import { DEFAULT_MAX_SERVER_FRAME_BYTES, FRAME_PREFIX_BYTES, isCompactPrefix, readPrefix } from './frame';
import { Interpolation, type InterpolationOptions } from './interpolation';
import {
  type CommandResult, type ComponentValues, type Entity, type InputAck, type InputRejected, type ServerMessage,
  type InputReference, type Welcome, COMPACT_INPUT_VERSION, ErrorCode, MAX_INPUT_TICKS, PROTOCOL_VERSION, decodeServerFrame, encodeCompactInput,
  encodeDestroy, encodeFocus, encodeHello, encodeInput, encodePing, encodeRemove, encodeResyncRequest, encodeSet, encodeSpawn,
  inputReference, sameInputReference,
} from './messages';
import { Mirror, sameEntity } from './mirror';
import type { Prediction } from './prediction';
import { type ComponentValue, type FixedValue, isString, makeValue } from './schema';
import { ServerClock, type ServerClockOptions } from './serverClock';
import type { Connector, Transport } from './transport';

// The core's `owner` component: wire id 0 on every server (the registry adds it first).
const OWNER_WIRE_ID = 0;

export type SessionState = 'connecting' | 'joined' | 'reconnecting' | 'closed';

export interface ReconnectPolicy {
  enabled: boolean;
  firstDelayMs: number; // doubling after each failed attempt
  maxDelayMs: number;
  withinMs: number;     // keep below the server's --reconnect-grace
}

export interface SessionOptions {
  transport: Connector;
  name?: string;
  authToken?: string;
  connectToken?: string;
  // The key of an earlier Welcome (e.g. from localStorage), to be that owner again.
  resumeKey?: Uint8Array | null;
  // Called with each Welcome's resume key: keep it (it is a credential) to resume later.
  onResumeKey?: (key: Uint8Array) => void;
  timeoutMs?: number;        // each attempt: connect, Welcome and the snapshot
  pingIntervalMs?: number;
  silenceTimeoutMs?: number; // a joined connection that receives nothing this long is lost
  maxFrameBytes?: number;
  maxSendQueueBytes?: number;
  reconnect?: Partial<ReconnectPolicy>;
  clock?: Partial<ServerClockOptions>;
  interpolation?: Partial<InterpolationOptions>;
  // Run update() by itself every this many milliseconds (true: 16); else the caller does.
  autoUpdate?: boolean | number;
  // Monotonic seconds; performance.now() by default (tests pass simulated time).
  now?: () => number;
  // Client-side prediction (docs/PREDICTION.md, "In the browser"): a game's prediction module,
  // loaded (Prediction.load). The session hands it every Welcome, Snapshot, Delta and Checksum,
  // predicts the entities this player owns, gives it each input tick as it is sent, and runs it
  // in update(); read it with `predictor`. A game without one keeps the session's behaviour.
  prediction?: Prediction;
}

export interface SessionEvents {
  joined?: (w: Welcome) => void;
  reconnected?: (w: Welcome) => void;
  disconnected?: (reason: string, willReconnect: boolean) => void;
  spawned?: (e: Entity) => void;
  entered?: (e: Entity) => void;
  // `type` is the component's wire id, `name` its name (what has/get/sample also take).
  updated?: (e: Entity, type: number, name: string) => void;
  left?: (e: Entity) => void;
  destroyed?: (e: Entity) => void;
  removed?: (e: Entity, type: number, name: string) => void;
  // An entity of this player's (its core `owner` is clientId) is in the mirror: spawned or come
  // into view owned by this client, or its owner became this client. Once per entity while it
  // stays; after the spawned, entered or updated event that brought it. A game finds its
  // player's entity here: a server makes it when the player joins, so it arrives with a tick
  // after `joined`, not in it.
  owned?: (e: Entity) => void;
  inputRejected?: (r: InputRejected) => void;
  commandResult?: (r: CommandResult) => void;
  checksum?: (tick: bigint, matched: boolean) => void;
}

export interface SessionStats {
  bytesReceived: number;
  framesReceived: number;
  bytesSent: number;
  framesSent: number;
  inputFramesSent: number; // both forms
  inputTicksSent: number;
  compactInputFramesSent: number; // of inputFramesSent, compact ones (protocol 6)
  reconnects: number;
}

interface Pending {
  resolve: (r: CommandResult) => void;
  reject: (e: Error) => void;
}

export class Session {
  events: SessionEvents = {};
  readonly mirror: Mirror;
  readonly stats: SessionStats = { bytesReceived: 0, framesReceived: 0, bytesSent: 0, framesSent: 0, inputFramesSent: 0, inputTicksSent: 0, compactInputFramesSent: 0, reconnects: 0 };

  private readonly options: Required<Omit<SessionOptions, 'authToken' | 'connectToken' | 'resumeKey' | 'onResumeKey' | 'name' | 'autoUpdate' | 'reconnect' | 'clock' | 'interpolation' | 'prediction'>> & SessionOptions;
  private readonly policy: ReconnectPolicy;
  private state_: SessionState = 'connecting';
  private closedReason_ = '';
  private transport: Transport | null = null;
  private attempt = 0;
  private received: { bytes: Uint8Array; at: number }[] = [];
  private failure: { reason: string; connecting: boolean } | null = null;
  private connected = false;
  private welcomed = false;
  private attemptDeadline = 0;
  private lastReceived = 0;
  private reconnectDeadline = 0;
  private nextAttempt = 0;
  private backoffMs = 0;
  private welcome_: Welcome | null = null;
  private history: Interpolation | null = null;
  private clock: ServerClock;
  private applyingSnapshot = false;
  private snapshotDone = false;
  private inUpdate = false;
  private active: SessionEvents = {};
  private timer: ReturnType<typeof setInterval> | null = null;

  private owned: Entity[] = [];                  // ownedEntities(), in arrival order
  private ownedIndex = new Set<number>();        // their indices
  private inputEntity: Entity | null = null;
  private input: ComponentValues = {};
  // A button (a boolean field) pressed and released before any Input carried it: the value
  // with the press, sent for one tick by the next Input. sentInput: what the last Input ended with.
  private sentInput: ComponentValues = {};
  private unsentPress: ComponentValues | null = null;
  // Lag compensation (protocol 5): the render tick the player saw when the input changed, sent
  // with the first Input after the change; and the one of an unsent press.
  private inputShown: number | null = null;
  private unsentPressShown: number | null = null;
  private lastPredicted = 0; // when update() last ran the prediction
  private nextInputTick = 0;
  private lastInputTick_ = 0;
  private lastAck: InputAck | null = null;
  private lastRejected: InputRejected | null = null;
  // The entity and types of the last full Input sent on this connection (protocol 6): what the
  // server fills a compact Input in with. Null on a new connection.
  private inputRef: InputReference | null = null;
  // The version each Hello names: from 6 on the server sends its InputAcks compact.
  private readonly helloVersion: number = PROTOCOL_VERSION;

  private nextPing = 0;
  private pingNonce = 0n;
  private pings: { nonce: bigint; sent: number }[] = [];
  private lastRequestId = 0;
  private pending = new Map<number, Pending>();

  // Starts connecting (hash-wasm's WebAssembly loads first) and returns once the attempt has
  // begun; the session joins in later update() calls.
  static async connect(options: SessionOptions): Promise<Session> {
    return new Session(options, await ChecksumHasher.create());
  }

  private constructor(options: SessionOptions, hasher: ChecksumHasher) {
    this.options = {
      timeoutMs: 5000, pingIntervalMs: 1000, silenceTimeoutMs: 5000, maxFrameBytes: DEFAULT_MAX_SERVER_FRAME_BYTES,
      maxSendQueueBytes: 1024 * 1024, now: () => performance.now() / 1000, ...options,
    };
    this.policy = { enabled: true, firstDelayMs: 100, maxDelayMs: 2000, withinMs: 10_000, ...options.reconnect };
    const o = this.options;
    if (!(o.timeoutMs > 0 && o.pingIntervalMs > 0 && o.silenceTimeoutMs > 0 && o.maxSendQueueBytes > 0 &&
          this.policy.firstDelayMs > 0 && this.policy.maxDelayMs >= this.policy.firstDelayMs && this.policy.withinMs > 0)) {
      throw new RangeError('session options: the intervals, timeouts and queue bounds must be positive, and reconnect.maxDelayMs at least reconnect.firstDelayMs');
    }
    this.mirror = new Mirror(hasher);
    this.clock = new ServerClock(options.clock);
    this.installMirrorEvents();
    this.startAttempt(o.now());
    if (options.autoUpdate) {
      const every = typeof options.autoUpdate === 'number' ? options.autoUpdate : 16;
      this.timer = setInterval(() => this.update(), every);
    }
  }

  get state(): SessionState { return this.state_; }
  // Read again after a call that may change it (TypeScript narrows fields across calls).
  private currentState(): SessionState { return this.state_; }
  // Why the session closed; empty until then.
  get closedReason(): string { return this.closedReason_; }
  get welcome(): Welcome | null { return this.welcome_; }
  get clientId(): number { return this.welcome_?.clientId ?? 0; }
  // The entities in the mirror that this player owns (events.owned told of each), in the
  // order they came.
  ownedEntities(): readonly Entity[] { return this.owned; }
  get serverTime(): ServerClock { return this.clock; }
  get renderTick(): number { return this.clock.renderTick; }
  get ackedInputTick(): bigint { return this.lastAck?.appliedTick ?? 0n; }
  get lastInputTick(): number { return this.lastInputTick_; }
  get lastInputAck(): InputAck | null { return this.lastAck; }
  get lastInputRejected(): InputRejected | null { return this.lastRejected; }
  // The prediction (options.prediction), or null.
  get predictor(): Prediction | null { return this.options.prediction ?? null; }

  // ---- the loop ---------------------------------------------------------------------------------

  update(): void {
    if (this.inUpdate) {
      throw new Error('Session.update() called from one of its events: events run inside update(); do that work after it returns');
    }
    this.inUpdate = true;
    try {
      this.active = { ...this.events };
      if (this.state_ === 'closed') return;
      this.receive();
      const now = this.options.now();
      if (this.currentState() !== 'closed') this.checkDeadlines(now);
      if (this.state_ === 'reconnecting' && this.transport === null && now >= this.nextAttempt) this.startAttempt(now);
      if (this.welcome_) this.clock.advance(now);
      if (this.state_ === 'joined') {
        this.sendPing(now);
        this.sendInput();
        this.predict(now);
      }
    } finally {
      this.inUpdate = false;
    }
  }

  // Closes for good ("closed by the client"): nothing more is sent or reported.
  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (this.state_ === 'closed') return;
    this.dropTransport();
    this.state_ = 'closed';
    this.closedReason_ = 'closed by the client';
    this.rejectPending('the session was closed by the client');
  }

  // ---- reading the world --------------------------------------------------------------------------

  // The value of `type` (a name or wire id) to show for e: interpolated at the render tick when
  // the server marks the type interpolated, else the mirror's latest; undefined when e does not
  // have it. Throws an UnknownComponentError for a type the server does not have. T only types
  // the result, like mirror.get<T>.
  sample<T extends object | string = ComponentValue>(e: Entity, type: string | number,
                                                    renderTick: number = this.clock.renderTick): T | undefined {
    const info = this.mirror.types.get(type);
    if (info.interpolated && !isString(info) && this.history !== null) {
      const v = this.history.sample(e, info.id, renderTick);
      if (v !== null) return v as T;
    }
    return this.mirror.get<T>(e, info.id);
  }

  // What to draw for e, at one call site: the predicted value with its correction's offset
  // decaying when e is predicted and `type` is one of the predicted types, else sample().
  rendered<T extends object | string = ComponentValue>(e: Entity, type: string | number): T | undefined {
    const p = this.options.prediction;
    if (p !== undefined && p.tracks(e)) {
      const name = this.mirror.types.get(type).name;
      const value = p.rendered(e, name);
      if (value !== undefined) return value as T;
    }
    return this.sample<T>(e, type);
  }

  // ---- commands: resolved by their CommandResult, rejected with CommandError ---------------------

  spawn(components: ComponentValues = {}): Promise<Entity> {
    return this.command((id) => encodeSpawn(this.mirror.types, id, components)).then((r) => r.entity!);
  }
  destroy(entity: Entity): Promise<void> {
    return this.command((id) => encodeDestroy(id, entity)).then(() => undefined);
  }
  set(entity: Entity, components: ComponentValues): Promise<void> {
    return this.command((id) => encodeSet(this.mirror.types, id, entity, components)).then(() => undefined);
  }
  // Removes one type or several (names or wire ids).
  remove(entity: Entity, types: string | number | readonly (string | number)[]): Promise<void> {
    const list = typeof types === 'string' || typeof types === 'number' ? [types] : types;
    return this.command((id) => encodeRemove(this.mirror.types, id, entity, list)).then(() => undefined);
  }
  // Moves this player's area of interest (servers with interest management); no answer.
  focus(x: number, y: number): boolean {
    return this.state_ === 'joined' && this.enqueue(encodeFocus(x, y));
  }

  private command(encode: (requestId: number) => Uint8Array): Promise<CommandResult> {
    if (this.state_ !== 'joined') {
      return Promise.reject(new ConnectionLostError(`not sent: the session is ${this.state_}`));
    }
    let frame: Uint8Array;
    const requestId = ++this.lastRequestId;
    try {
      frame = encode(requestId);
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise<CommandResult>((resolve, reject) => {
      this.pending.set(requestId, { resolve, reject });
      if (!this.enqueue(frame)) {
        this.pending.delete(requestId);
        reject(new ConnectionLostError('not sent: the connection is gone'));
      }
    });
  }

  private rejectPending(why: string): void {
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(new ConnectionLostError(`${why}: no CommandResult (the command may or may not have been applied)`));
  }

  // ---- input ------------------------------------------------------------------------------------

  // Sets the current value of input types (by name) for the player's entity; update() stamps it
  // for each tick that falls due, ticks missed by a slow frame batched in one Input of up to 16.
  setInput(entity: Entity, values: ComponentValues): void {
    if (this.welcome_ === null) throw new Error('setInput before Welcome: the server\'s input types are not known yet');
    if (entity.version === 0) throw new Error('setInput: no entity');
    const merged = sameEntity(entity, this.inputEntity) ? { ...this.input, ...values } : { ...values };
    encodeInput(this.mirror.types, entity, 1n, [merged]); // throws for what the server would refuse
    if (!sameEntity(entity, this.inputEntity)) {
      this.inputEntity = entity;
      this.nextInputTick = 0;
      this.input = {};
      this.sentInput = {};
      this.unsentPress = null;
      this.unsentPressShown = null;
    }
    // A button pressed and released before any Input carried the press (a tap shorter than a
    // tick: frames come twice as often as 30 Hz ticks): the press still goes out, for a tick.
    if (this.unsentPress === null && !buttonsDiffer(merged, this.sentInput) && buttonsDiffer(this.input, this.sentInput)) {
      this.unsentPress = this.input;
      this.unsentPressShown = this.inputShown;
    }
    // The moment the player acted is when the input changed: the first Input sent after it
    // carries that frame's render tick, later ones (the key held) the render tick as they go.
    if (this.clock.synchronized && !sameValues(merged, this.input)) this.inputShown = this.clock.renderTick;
    this.input = merged;
  }

  // Stops sending input (the server repeats the last one it applied).
  clearInput(): void {
    this.input = {};
    this.inputEntity = null;
    this.nextInputTick = 0;
    this.sentInput = {};
    this.unsentPress = null;
    this.unsentPressShown = null;
  }

  private sendInput(): void {
    if (this.inputEntity === null || Object.keys(this.input).length === 0 || !this.clock.synchronized) return;
    const due = this.clock.inputTick;
    if (this.nextInputTick === 0 || due + MAX_INPUT_TICKS < this.nextInputTick) this.nextInputTick = due;
    const p = this.options.prediction;
    // The prediction ran this tick already, with the input before: this one starts at the next,
    // on both sides (stamped `due`, the server would apply it a tick before the prediction).
    if (p !== undefined && this.nextInputTick <= p.tick) this.nextInputTick = p.tick + 1;
    if (due < this.nextInputTick) return; // this tick's input is sent already
    const oldest = due >= MAX_INPUT_TICKS ? due - MAX_INPUT_TICKS + 1 : 1;
    const first = Math.max(this.nextInputTick, oldest);
    const ticks = Array.from({ length: due - first + 1 }, () => this.input);
    // The screen the player saw as it set this input: lag compensation rewinds to it. As a
    // whole tick and the fraction towards the next, never past the tick stamped.
    const compactable = (this.welcome_?.protocolVersion ?? 0) >= COMPACT_INPUT_VERSION;
    const renderAt = (shown: number): [number, number] => {
      shown = Math.max(shown, 0);
      const tick = Math.min(Math.floor(shown), due);
      const fraction = tick === due ? 0 : Math.min(shown - tick, 0.99999);
      // In 256ths on a version 6 connection, whichever form goes: the compact one has no finer.
      return [tick, compactable ? Math.floor(fraction * 256) / 256 : fraction];
    };
    const changedShown = this.inputShown;
    this.inputShown = null;
    let [renderTick, renderFraction] = renderAt(changedShown ?? this.clock.renderTick);
    if (this.unsentPress !== null) {
      // The press first, for one tick; the value now from the next. An Input of that one tick
      // carries the press's render tick, and the next one the release's.
      ticks[0] = this.unsentPress;
      this.unsentPress = null;
      const pressShown = this.unsentPressShown;
      this.unsentPressShown = null;
      if (ticks.length === 1 && pressShown !== null) {
        this.inputShown = changedShown;
        [renderTick, renderFraction] = renderAt(pressShown);
      }
    }
    this.sentInput = ticks[ticks.length - 1]!;
    this.nextInputTick = due + 1;
    let frame: Uint8Array;
    let reference: InputReference | null = null; // set when the frame is a full Input
    try {
      const types = this.mirror.types;
      const ref = inputReference(types, this.inputEntity, ticks[0]!);
      if (compactable && this.inputRef !== null && sameInputReference(types, this.inputRef, ref)) {
        frame = encodeCompactInput(types, this.inputRef, this.inputEntity, BigInt(first), ticks, BigInt(renderTick), renderFraction);
      } else {
        frame = encodeInput(types, this.inputEntity, BigInt(first), ticks, BigInt(renderTick), renderFraction);
        reference = ref;
      }
    } catch (e) { // the server's types changed under a reconnect
      this.lastRejected = { kind: 'inputRejected', firstTick: BigInt(first), code: ErrorCode.InvalidValue, message: `input not sent: ${(e as Error).message}`, refused: 1 };
      this.clearInput();
      this.fire(this.active.inputRejected, this.lastRejected);
      return;
    }
    if (p !== undefined) {
      // The player sees its input at once: the prediction runs these ticks with it.
      for (let tick = Math.max(first, p.tick + 1); tick <= due; ++tick) {
        p.setInput(tick, this.inputEntity, this.inputBytes(ticks[tick - first]!));
      }
    }
    if (this.enqueue(frame)) {
      ++this.stats.inputFramesSent;
      this.stats.inputTicksSent += ticks.length;
      if (reference !== null) this.inputRef = reference;
      else ++this.stats.compactInputFramesSent;
      this.lastInputTick_ = due;
    }
  }

  private inputBytes(values: ComponentValues): { type: number; bytes: Uint8Array }[] {
    return Object.entries(values).map(([name, fields]) => {
      const info = this.mirror.types.get(name);
      return { type: info.id, bytes: makeValue(info, fields as FixedValue) };
    });
  }

  // The prediction's frame: reconcile with the newest server tick, predict up to the input
  // tick, decay the smoothing (C++: session::impl::predict).
  private predict(now: number): void {
    const p = this.options.prediction;
    if (p === undefined) return;
    const elapsed = this.lastPredicted === 0 ? 0 : now - this.lastPredicted;
    this.lastPredicted = now;
    p.update(this.clock.synchronized ? this.clock.inputTick : 0, elapsed);
  }

  // ---- connection attempts ------------------------------------------------------------------------

  private startAttempt(now: number): void {
    const attempt = ++this.attempt;
    this.inputRef = null; // a new connection: the server has no reference
    this.received = [];
    this.failure = null;
    this.connected = false;
    this.welcomed = false;
    this.attemptDeadline = now + this.options.timeoutMs / 1000;
    if (this.state_ === 'reconnecting') this.attemptDeadline = Math.min(this.attemptDeadline, this.reconnectDeadline);
    this.lastReceived = now;
    // A reconnect presents the resume key alone: the connect token was used up.
    const resuming = this.welcome_ !== null;
    const hello = encodeHello({
      protocolVersion: this.helloVersion, clientName: this.options.name ?? '', authToken: this.options.authToken,
      resumeKey: resuming ? this.welcome_!.resumeKey : this.options.resumeKey ?? null,
      connectToken: resuming ? undefined : this.options.connectToken,
    });
    const live = () => attempt === this.attempt;
    this.transport = this.options.transport({
      open: () => {
        if (!live()) return;
        this.connected = true;
        this.transport?.send(hello);
        ++this.stats.framesSent;
        this.stats.bytesSent += hello.length;
      },
      frame: (bytes) => {
        if (live()) this.received.push({ bytes, at: this.options.now() });
      },
      closed: (reason, connecting) => {
        if (live() && this.failure === null) this.failure = { reason, connecting };
      },
    }, this.options.maxFrameBytes, this.helloVersion);
  }

  private dropTransport(): void {
    this.transport?.close();
    this.transport = null;
    ++this.attempt; // whatever the old attempt still delivers is ignored
    this.inputRef = null;
    this.received = [];
    this.failure = null;
    this.welcomed = false;
  }

  private enqueue(frame: Uint8Array): boolean {
    const t = this.transport;
    if (t === null || !this.connected || this.failure !== null) return false;
    if (t.bufferedAmount + frame.length > this.options.maxSendQueueBytes) {
      this.failure = { reason: `send queue full: ${t.bufferedAmount} bytes not yet taken by the server, the bound is ${this.options.maxSendQueueBytes}`, connecting: false };
      return false;
    }
    t.send(frame);
    ++this.stats.framesSent;
    this.stats.bytesSent += frame.length;
    return true;
  }

  // ---- what arrived, in order -----------------------------------------------------------------------

  private receive(): void {
    const attempt = this.attempt;
    while (this.received.length > 0) {
      const { bytes, at } = this.received.shift()!;
      this.lastReceived = Math.max(this.lastReceived, at);
      this.stats.bytesReceived += bytes.length;
      this.handleFrame(bytes, at);
      if (attempt !== this.attempt || this.state_ === 'closed') return;
    }
    if (this.failure !== null) this.lost(this.failure, this.options.now());
  }

  private handleFrame(bytes: Uint8Array, at: number): void {
    // A compact frame (protocol 6: the InputAck) decodes to the same message as the full one and
    // goes where it goes (never to the prediction). Before version 6 its prefix is a length of
    // 2^31 or more: over any limit, as a transport of such a connection refuses it.
    if (this.helloVersion < COMPACT_INPUT_VERSION && bytes.length >= FRAME_PREFIX_BYTES && isCompactPrefix(readPrefix(bytes))) {
      this.finish(`the server sent a malformed frame: a frame of ${readPrefix(bytes)} bytes, more than the limit of ${this.options.maxFrameBytes}`);
      return;
    }
    let message: ServerMessage;
    try {
      message = decodeServerFrame(bytes, this.options.maxFrameBytes);
    } catch (e) {
      const what = (e as Error).name === 'SchemaError' ? 'a schema this client refuses' : 'a malformed frame';
      this.finish(`the server sent ${what}: ${(e as Error).message}`);
      return;
    }
    ++this.stats.framesReceived;
    const replication = message.kind === 'snapshot' || message.kind === 'delta' || message.kind === 'checksum';
    // The prediction hears every frame: the one after a Delta tells it that tick is whole.
    if (!replication && message.kind !== 'welcome' && this.welcomed) this.options.prediction?.receive(bytes);
    switch (message.kind) {
      case 'snapshot': case 'delta': case 'checksum':
        if (!this.welcomed) {
          this.finish('the server sent world state before Welcome');
          return;
        }
        this.options.prediction?.receive(bytes); // first: events below may track an entity it holds
        this.replicate(message, at);
        return;
      case 'welcome': this.welcomedBy(message, at, bytes); return;
      case 'commandResult': {
        const p = this.pending.get(message.requestId);
        if (p) {
          this.pending.delete(message.requestId);
          if (message.ok) p.resolve(message);
          else p.reject(new CommandError(message.code, message.message, message.requestId));
        }
        this.fire(this.active.commandResult, message);
        return;
      }
      case 'pong': {
        const k = this.pings.findIndex((p) => p.nonce === message.nonce);
        if (k >= 0) {
          this.clock.onPong(this.pings[k]!.sent, at);
          this.pings.splice(0, k + 1);
        }
        return;
      }
      case 'inputAck':
        if (message.appliedTick > message.tick) {
          this.finish('the server sent an InputAck whose applied tick is above its tick');
          return;
        }
        this.lastAck = message;
        this.clock.onInputAck(message.lead, at);
        return;
      case 'inputRejected':
        this.lastRejected = message;
        // The server forgot its reference: the next Input goes full.
        if (message.code === ErrorCode.Malformed || message.code === ErrorCode.InvalidValue) this.inputRef = null;
        this.fire(this.active.inputRejected, message);
        return;
      case 'disconnect': {
        // The server's word is final: reconnecting would only repeat it.
        const reason = message.reason === '' ? 'no reason given' : message.reason;
        this.finish(this.welcomed ? `disconnected by the server: ${reason}`
          : `the server refused${this.state_ === 'reconnecting' ? ' the reconnect' : ''}: ${reason}`);
        return;
      }
    }
  }

  private replicate(message: ServerMessage & { kind: 'snapshot' | 'delta' | 'checksum' }, at: number): void {
    this.applyingSnapshot = message.kind === 'snapshot';
    this.snapshotDone = false;
    let applied: boolean;
    try {
      applied = this.mirror.apply(message); // the world's events fire in here
    } finally {
      this.applyingSnapshot = false;
    }
    if (this.state_ === 'closed') return;
    if (!applied) {
      // Inconsistent: the mirror waits for a new snapshot, asked for once per inconsistency.
      const reason = this.mirror.takeResyncReason();
      if (reason !== null) this.enqueue(encodeResyncRequest(reason));
      return;
    }
    if (message.kind === 'delta' && !message.ownerOnly) {
      this.clock.onTick(Number(message.tick), at);
      this.history?.onTick(Number(message.tick));
    }
    if (this.snapshotDone) {
      this.clock.onTick(Number(this.mirror.tick), at);
      this.snapshotCompleted();
    }
  }

  private welcomedBy(w: Welcome, at: number, bytes: Uint8Array): void {
    if (this.welcomed) {
      this.finish('the server sent a second Welcome');
      return;
    }
    if (!(w.tickRate > 0)) {
      this.finish(`the server announced a tick rate of ${w.tickRate}`);
      return;
    }
    if (this.history === null || !w.components.equals(this.mirror.types)) {
      // Other types (a reconnect found a changed server): what the mirror held is gone.
      for (const e of this.mirror.entities()) this.fire(this.active.destroyed, e);
      this.mirror.setSchema(w.components);
      this.history = new Interpolation(w.components, this.options.interpolation);
    }
    if (this.welcome_ === null || this.welcome_.tickRate !== w.tickRate || w.currentTick < this.mirror.tick) {
      this.clock = new ServerClock({ ...this.options.clock, rate: w.tickRate });
    }
    this.clock.onWelcome(Number(w.currentTick), at);
    if (this.welcome_ !== null && this.welcome_.clientId !== w.clientId) {
      // The server forgot the player: its entity is not ours any more.
      this.clearInput();
      this.owned = [];  // the snapshot tells anew what is ours
      this.ownedIndex.clear();
    }
    const keyChanged = this.welcome_ === null || !sameBytes(this.welcome_.resumeKey, w.resumeKey);
    this.welcome_ = w;
    this.welcomed = true;
    this.nextPing = 0;
    this.pings = [];
    this.nextInputTick = 0;
    this.lastAck = null;
    const p = this.options.prediction;
    if (p !== undefined) {
      // A new prediction (a reconnect starts one), with what the mirror keeps of ours.
      p.receive(bytes, w.components);
      for (const e of this.owned) p.track(e);
    }
    if (keyChanged && w.resumeKey.length > 0) this.options.onResumeKey?.(w.resumeKey);
  }

  private snapshotCompleted(): void {
    if (this.state_ === 'connecting') {
      this.state_ = 'joined';
      this.fire(this.active.joined, this.welcome_!);
    } else if (this.state_ === 'reconnecting') {
      this.state_ = 'joined';
      ++this.stats.reconnects;
      this.fire(this.active.reconnected, this.welcome_!);
    }
  }

  // ---- state changes ----------------------------------------------------------------------------------

  private lost(f: { reason: string; connecting: boolean }, now: number): void {
    this.dropTransport();
    switch (this.state_) {
      case 'connecting':
        this.finish(f.connecting ? f.reason : `cannot join: ${f.reason}`); // the game decides to retry
        return;
      case 'joined': {
        const reason = `lost the connection: ${f.reason}`;
        this.rejectPending(reason);
        if (!this.policy.enabled || this.welcome_!.resumeKey.length === 0) {
          this.finish(reason);
          return;
        }
        this.state_ = 'reconnecting';
        this.reconnectDeadline = now + this.policy.withinMs / 1000;
        this.backoffMs = this.policy.firstDelayMs;
        this.nextAttempt = now + this.backoffMs / 1000;
        this.fire(this.active.disconnected, reason, true);
        return;
      }
      case 'reconnecting':
        this.backoffMs = Math.min(this.backoffMs * 2, this.policy.maxDelayMs);
        this.nextAttempt = now + this.backoffMs / 1000;
        if (this.nextAttempt >= this.reconnectDeadline) {
          this.finish(`could not reconnect within ${this.policy.withinMs} ms: ${f.reason}`);
        }
        return;
      case 'closed':
        return;
    }
  }

  // Closed for good, with the last event: disconnected(reason, false).
  private finish(reason: string): void {
    if (this.state_ === 'closed') return;
    this.dropTransport();
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.state_ = 'closed';
    this.closedReason_ = reason;
    this.rejectPending(reason);
    this.active.disconnected?.(reason, false);
  }

  private checkDeadlines(now: number): void {
    if (this.transport === null) return;
    if (this.state_ === 'joined') {
      if (now - this.lastReceived > this.options.silenceTimeoutMs / 1000) {
        this.lost({ reason: `nothing received for ${this.options.silenceTimeoutMs} ms`, connecting: false }, now);
      }
      return;
    }
    if (now < this.attemptDeadline) return;
    this.lost({
      reason: !this.connected ? 'cannot connect: timed out' : !this.welcomed ? 'timed out joining (no Welcome)' : 'timed out joining (no complete snapshot)',
      connecting: true,
    }, now);
  }

  private sendPing(now: number): void {
    if (now < this.nextPing) return;
    this.nextPing = now + this.options.pingIntervalMs / 1000;
    const nonce = ++this.pingNonce;
    if (this.enqueue(encodePing(nonce))) {
      this.pings.push({ nonce, sent: now });
      if (this.pings.length > 16) this.pings.shift();
    }
  }

  // ---- events ---------------------------------------------------------------------------------------------

  private fire<A extends unknown[]>(fn: ((...args: A) => void) | undefined, ...args: A): void {
    if (this.state_ !== 'closed' && fn) fn(...args);
  }

  // Snapshots under interest management hold what is in view: what they drop went out of view.
  private snapshotOfView(): boolean {
    return this.applyingSnapshot && this.welcome_ !== null && this.welcome_.interestRadius > 0;
  }

  private record(e: Entity, type: number): void {
    const info = this.mirror.types.find(type);
    if (this.history !== null && info?.interpolated && !isString(info)) {
      this.history.onTick(Number(this.mirror.eventTick));
      const value = this.mirror.value(e, type);
      if (value !== null) this.history.record(e, type, value);
    }
  }

  private recordAll(e: Entity): void {
    if (this.history === null) return;
    this.history.appeared(e);
    for (const info of this.mirror.types.types) {
      if (info.interpolated && this.mirror.has(e, info.id)) this.record(e, info.id);
    }
  }

  private restartHistories(tick: bigint): void {
    // From the snapshot's tick: no interpolation across the gap before it.
    if (this.history === null) return;
    this.history.clear();
    this.history.onTick(Number(tick));
    for (const e of this.mirror.entities()) this.recordAll(e);
  }

  // events.owned and ownedEntities(): e's owner, after e came or its owner changed.
  private checkOwner(e: Entity): void {
    const owner = this.mirror.get<{ client: number }>(e, OWNER_WIRE_ID);
    const mine = owner !== undefined && this.welcome_ !== null && owner.client === this.welcome_.clientId;
    const listed = this.ownedIndex.has(e.index);
    if (mine && !listed) {
      this.ownedIndex.add(e.index);
      this.owned.push(e);
      this.options.prediction?.track(e);
      this.fire(this.active.owned, e);
    } else if (!mine && listed) {
      this.forgetOwned(e);
    }
  }

  private forgetOwned(e: Entity): void {
    if (!this.ownedIndex.delete(e.index)) return;
    this.options.prediction?.untrack(e);
    this.owned = this.owned.filter((o) => o.index !== e.index);
  }

  private installMirrorEvents(): void {
    this.mirror.events = {
      onSpawn: (e) => {
        this.recordAll(e);
        this.fire(this.snapshotOfView() ? this.active.entered : this.active.spawned, e);
        this.checkOwner(e);
      },
      onEnter: (e) => { this.recordAll(e); this.fire(this.active.entered, e); this.checkOwner(e); },
      onUpdate: (e, type, name) => {
        this.record(e, type);
        this.fire(this.active.updated, e, type, name);
        if (type === OWNER_WIRE_ID) this.checkOwner(e);
      },
      onRemove: (e, type, name) => { this.history?.forget(e, type); this.fire(this.active.removed, e, type, name); },
      onDestroy: (e) => {
        this.forgetOwned(e);
        this.fire(this.snapshotOfView() ? this.active.left : this.active.destroyed, e);
        this.history?.forget(e);
      },
      onLeave: (e) => { this.forgetOwned(e); this.fire(this.active.left, e); this.history?.forget(e); },
      onSnapshot: (tick) => { this.snapshotDone = true; this.restartHistories(tick); },
      onChecksum: (tick, matched) => this.fire(this.active.checksum, tick, matched),
    };
  }
}

function sameValues(a: ComponentValues, b: ComponentValues): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => {
    const x = (a as Record<string, unknown>)[k];
    const y = (b as Record<string, unknown>)[k];
    if (typeof x !== 'object' || x === null || typeof y !== 'object' || y === null) return x === y;
    const fx = Object.entries(x);
    return fx.length === Object.keys(y).length && fx.every(([f, v]) => (y as Record<string, unknown>)[f] === v);
  });
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

// Whether a and b hold different values of a boolean field (a button) of the same type. Other
// fields (an analog stick's numbers) do not count: a value that keeps changing is sent as it
// is at each tick.
function buttonsDiffer(a: ComponentValues, b: ComponentValues): boolean {
  for (const [type, value] of Object.entries(a)) {
    const other = (b as Record<string, unknown>)[type];
    if (typeof value !== 'object' || value === null || typeof other !== 'object' || other === null) continue;
    for (const [field, x] of Object.entries(value)) {
      if (typeof x === 'boolean' && (other as Record<string, unknown>)[field] !== x) return true;
    }
  }
  return false;
}

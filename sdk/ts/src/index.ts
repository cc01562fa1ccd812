// @ecsnet/client: the browser-safe entry point (no node: imports).
export { Session } from './session';
export type { SessionOptions, SessionEvents, SessionState, SessionStats, ReconnectPolicy } from './session';
export { CommandError, ConnectionLostError } from './errors';
export { webSocket } from './transports/webSocket';
export type { WebSocketConstructor, WebSocketLike, WebSocketTransportOptions } from './transports/webSocket';
export type { Connector, Transport, TransportHandlers } from './transport';
export { Prediction } from './prediction';
export type {
  PredictionModule, PredictionModuleFactory, PredictionOptions, PredictionStats, Misprediction, PredictedSpawn, SpawnRefusal,
  DeclaredType,
} from './prediction';
export { Mirror, expandIndexSet, entityName, sameEntity } from './mirror';
export type { MirrorEvents, MirrorStats } from './mirror';
export { ChecksumHasher } from './checksum';
export { ServerClock, defaultServerClockOptions } from './serverClock';
export type { ServerClockOptions } from './serverClock';
export { Interpolation, defaultInterpolationOptions } from './interpolation';
export type { InterpolationOptions } from './interpolation';
export { FrameReader, MalformedFrameError, DEFAULT_MAX_SERVER_FRAME_BYTES } from './frame';
export {
  Schema, SchemaError, UnknownComponentError, FieldType, Writer, makeValue, readValue, invalidValue, unpackValue, packColumn, valueBits,
  valueBytes, isString,
} from './schema';
export type { ComponentInfo, FieldInfo, FieldValue, FixedValue, ComponentValue } from './schema';
export {
  PROTOCOL_VERSION, COMPACT_INPUT_VERSION, MAX_INPUT_TICKS, ErrorCode, errorCodeName, decodeServerFrame, encodeHello, encodeSpawn,
  encodeDestroy, encodeSet, encodeRemove, encodePing, encodeResyncRequest, encodeFocus, encodeInput, encodeCompactInput, encodeCompactInputAck,
  inputReference, sameInputReference,
} from './messages';
export type {
  Entity, ServerMessage, Welcome, Snapshot, Delta, Checksum, CommandResult, Pong, Disconnect, InputAck, InputRejected,
  Column, EntityGroup, IndexSet, ComponentValues, Hello, InputReference,
} from './messages';

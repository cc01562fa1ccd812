import { errorCodeName } from './messages';

// A command the server refused: `code` is the wire ErrorCode (a code this SDK does not know
// is kept as is and named "unknown error").
export class CommandError extends Error {
  readonly codeName: string;
  constructor(readonly code: number, message: string, readonly requestId: number) {
    super(message);
    this.name = 'CommandError';
    this.codeName = errorCodeName(code);
  }
}

// A command that got no CommandResult: the session was not joined, or the connection ended
// before the answer (the command may or may not have been applied: re-read the world).
export class ConnectionLostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectionLostError';
  }
}

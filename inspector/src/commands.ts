// Spawn, destroy, set and remove as the page sends them: the server answers each with the same
// checks as any client's command (and ReadOnly unless it runs with --inspector-writes).
import { type ComponentInfo, type ComponentValues, type Entity, type Session, isString } from '@ecsnet/client';

export const parseEntity = (text: string): Entity => {
  const m = /^\s*(\d+):(\d+)\s*$/.exec(text);
  if (m === null) throw new TypeError(`'${text}' is not an entity (INDEX:VERSION)`);
  return { index: Number(m[1]), version: Number(m[2]) };
};
export const entityText = (e: Entity): string => `${e.index}:${e.version}`;

// Values typed as JSON ({"position": {"x": 1, "y": 2}, "name": "probe"}), or a TypeError.
export function parseValues(text: string): ComponentValues {
  const trimmed = text.trim();
  if (trimmed === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch (e) {
    throw new TypeError(`not JSON: ${(e as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new TypeError('values are a JSON object: {"type": {"field": value}, "stringType": "text"}');
  }
  return parsed as ComponentValues;
}

// A bare number or boolean for a type of one field stands for that field: {"health": 5} is
// {"health": {"value": 5}}.
export function withFieldNames(types: readonly ComponentInfo[], values: ComponentValues): ComponentValues {
  const out: ComponentValues = { ...values };
  for (const [name, value] of Object.entries(values)) {
    const info = types.find((t) => t.name === name);
    if (info !== undefined && !isString(info) && info.fields.length === 1 && (typeof value === 'number' || typeof value === 'boolean')) {
      out[name] = { [info.fields[0]!.name]: value };
    }
  }
  return out;
}

// What went wrong, for the page: the server's code name first when it refused.
export function describeError(e: unknown): string {
  const err = e as { codeName?: string; message?: string };
  return err.codeName ? `${err.codeName}: ${err.message}` : String(err.message ?? e);
}

export class Commands {
  constructor(private readonly session: Session) {}

  async spawn(values: ComponentValues): Promise<string> {
    return entityText(await this.session.spawn(withFieldNames(this.session.mirror.types.types, values)));
  }
  destroy(entity: string): Promise<void> {
    return this.session.destroy(parseEntity(entity));
  }
  set(entity: string, values: ComponentValues): Promise<void> {
    return this.session.set(parseEntity(entity), withFieldNames(this.session.mirror.types.types, values));
  }
  remove(entity: string, types: readonly string[]): Promise<void> {
    return this.session.remove(parseEntity(entity), types);
  }
}

// The entity table's columns (every replicated component decoded from the schema: a column per
// field, one per string type), its filter and its sort, independent of the DOM.
import { type ComponentInfo, type FieldValue, isString } from '@ecsnet/client';
import { type NumberReader, numberReader } from './fields';
import type { WorldModel } from './world';

export interface TableColumn {
  readonly key: string;      // 'entity', 'owner', 'position.x', 'name'
  readonly label: string;
  readonly type: ComponentInfo | null; // null: the entity or owner column
  readonly field: string | null;       // null: a string type, or the entity/owner column
}

export interface RowQuery {
  withType: number | null;  // only entities that have this component type
  owner: number | null;     // only this owner's (0: the server's)
  sortKey: string;          // a column key
  descending: boolean;
}

export const defaultQuery = (): RowQuery => ({ withType: null, owner: null, sortKey: 'entity', descending: false });

export function tableColumns(types: readonly ComponentInfo[]): TableColumn[] {
  const columns: TableColumn[] = [
    { key: 'entity', label: 'entity', type: null, field: null },
    { key: 'owner', label: 'owner', type: null, field: null },
  ];
  for (const t of types) {
    if (!t.replicated || t.name === 'owner') continue;
    if (isString(t)) {
      columns.push({ key: t.name, label: t.name, type: t, field: null });
    } else if (t.fields.length === 1) {
      columns.push({ key: t.name, label: t.name, type: t, field: t.fields[0]!.name });
    } else {
      for (const f of t.fields) columns.push({ key: `${t.name}.${f.name}`, label: `${t.name}.${f.name}`, type: t, field: f.name });
    }
  }
  return columns;
}

// The live indices that pass the query, sorted (entities without the sorted value last, then
// by index).
export function selectRows(world: WorldModel, columns: readonly TableColumn[], query: RowQuery): Int32Array {
  const rows: number[] = [];
  for (let k = 0; k < world.count; ++k) {
    const i = world.live[k]!;
    if (query.withType !== null && !world.has(i, query.withType)) continue;
    if (query.owner !== null && world.owners[i] !== query.owner) continue;
    rows.push(i);
  }
  const column = columns.find((c) => c.key === query.sortKey) ?? columns[0]!;
  const sign = query.descending ? -1 : 1;
  const key = sortKeys(world, column, rows);
  if (key === null) {
    rows.sort((a, b) => sign * (a - b));
    return Int32Array.from(rows);
  }
  const order = rows.map((_, k) => k);
  order.sort((a, b) => {
    const va = key[a], vb = key[b];
    const missingA = va === undefined, missingB = vb === undefined;
    if (missingA || missingB) return missingA === missingB ? rows[a]! - rows[b]! : missingA ? 1 : -1;
    if (va !== vb) return sign * (va < vb ? -1 : 1);
    return rows[a]! - rows[b]!;
  });
  return Int32Array.from(order, (k) => rows[k]!);
}

// Each row's value of the column (undefined: the entity lacks it), or null to sort by index.
function sortKeys(world: WorldModel, column: TableColumn, rows: readonly number[]): (number | string | undefined)[] | null {
  if (column.key === 'entity') return null;
  if (column.key === 'owner') return rows.map((i) => world.owners[i]!);
  const type = column.type!;
  if (column.field === null) {
    return rows.map((i) => world.mirror.text(world.entityAt(i)!, type.id) ?? undefined);
  }
  const read: NumberReader | null = numberReader(type, column.field);
  return rows.map((i) => {
    const v = world.mirror.value(world.entityAt(i)!, type.id);
    return v === null || read === null ? undefined : read(v);
  });
}

export function formatField(v: FieldValue): string {
  if (typeof v === 'number' && !Number.isInteger(v)) return v.toFixed(2);
  return String(v);
}

// One cell's text ('' when the entity lacks the component; '-' for the server as owner).
export function cellText(world: WorldModel, index: number, column: TableColumn): string {
  const e = world.entityAt(index);
  if (e === null) return '';
  if (column.key === 'entity') return `${e.index}:${e.version}`;
  if (column.key === 'owner') return world.owners[index] === 0 ? 'server' : String(world.owners[index]);
  const value = world.mirror.get(e, column.type!.id);
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  return formatField(value[column.field!]!);
}

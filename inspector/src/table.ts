// The entity table, virtualised: only the rows in view are in the DOM (a pool of row elements
// whose text is replaced), refreshed a few times a second; click a header to sort, a row to
// select.
import type { ComponentInfo } from '@ecsnet/client';
import { type RowQuery, type TableColumn, cellText, defaultQuery, selectRows, tableColumns } from './tableModel';
import type { WorldModel } from './world';

const ROW_HEIGHT = 22; // px, as in the stylesheet
const REFRESH_MS = 250;

export class EntityTable {
  query: RowQuery = defaultQuery();
  selected = -1;
  rows: Int32Array = new Int32Array(0);

  private columns: TableColumn[] = [];
  private schemaTypes: readonly ComponentInfo[] | null = null;
  private readonly head: HTMLElement;
  private readonly viewport: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly body: HTMLElement;
  private readonly typeFilter: HTMLSelectElement;
  private readonly ownerFilter: HTMLInputElement;
  private readonly summary: HTMLElement;
  private pool: HTMLElement[] = [];
  private selectedRevision = -1;
  private renderedRevision = -1;
  private lastRefresh = -Infinity;
  private stale = true;     // the rows in view must be rendered
  private requeried = true; // the rows must be selected again
  private revealing = false; // the selected entity is not among the rows yet

  constructor(root: HTMLElement, private readonly world: WorldModel, private readonly onSelect: (index: number) => void) {
    this.typeFilter = root.querySelector('select[name=with-type]')!;
    this.ownerFilter = root.querySelector('input[name=owner]')!;
    this.summary = root.querySelector('.table-summary')!;
    this.viewport = root.querySelector('.table-viewport')!;
    this.head = root.querySelector('.table-head')!;
    this.spacer = root.querySelector('.table-spacer')!;
    this.body = root.querySelector('.table-rows')!;
    this.viewport.addEventListener('scroll', () => { this.stale = true; });
    new ResizeObserver(() => { this.stale = true; }).observe(this.viewport);
    this.typeFilter.addEventListener('change', () => {
      this.query.withType = this.typeFilter.value === '' ? null : Number(this.typeFilter.value);
      this.requery();
    });
    this.ownerFilter.addEventListener('input', () => {
      const text = this.ownerFilter.value.trim().toLowerCase();
      this.query.owner = text === '' ? null : text === 'server' ? 0 : /^\d+$/.test(text) ? Number(text) : -1;
      this.requery();
    });
    this.body.addEventListener('click', (ev) => {
      const row = (ev.target as HTMLElement).closest<HTMLElement>('.row');
      if (row?.dataset.index !== undefined) this.onSelect(Number(row.dataset.index));
    });
    this.head.addEventListener('click', (ev) => {
      const key = (ev.target as HTMLElement).closest<HTMLElement>('[data-key]')?.dataset.key;
      if (key === undefined) return;
      this.query.descending = this.query.sortKey === key ? !this.query.descending : false;
      this.query.sortKey = key;
      this.renderHead();
      this.requery();
    });
  }

  // Marks `index`'s row and scrolls to it (once it is among the rows, if not yet).
  reveal(index: number): void {
    this.selected = index;
    this.revealing = !this.scrollTo(index);
    this.stale = true;
  }

  private scrollTo(index: number): boolean {
    const at = this.rows.indexOf(index);
    if (at < 0) return false;
    const top = at * ROW_HEIGHT;
    if (top < this.viewport.scrollTop || top > this.viewport.scrollTop + this.viewport.clientHeight - 2 * ROW_HEIGHT) {
      this.viewport.scrollTop = Math.max(0, top - this.viewport.clientHeight / 2);
    }
    return true;
  }

  // Called every frame. Rows are re-selected (filter, sort) at most every REFRESH_MS when
  // entities came or went or the sorted values may have moved, and at once after a change of
  // the query; the rows in view are re-rendered with them, and at once after a scroll.
  refresh(nowMs: number): void {
    if (this.world.types !== this.schemaTypes) this.setSchema(this.world.types);
    const due = nowMs - this.lastRefresh >= REFRESH_MS;
    if (!due && !this.stale && !this.requeried) return;
    const world = this.world;
    const moved = world.membershipRevision !== this.selectedRevision ||
      (this.query.sortKey !== 'entity' && world.revision !== this.renderedRevision);
    if (this.requeried || (due && moved)) {
      this.rows = selectRows(world, this.columns, this.query);
      this.selectedRevision = world.membershipRevision;
      this.spacer.style.height = `${this.rows.length * ROW_HEIGHT}px`;
      this.summary.textContent = `${this.rows.length} of ${world.count} entities`;
      this.requeried = false;
      this.stale = true;
      if (this.revealing) this.revealing = !this.scrollTo(this.selected);
    }
    if (due && world.revision !== this.renderedRevision) this.stale = true;
    if (!this.stale) return;
    if (due) this.lastRefresh = nowMs;
    this.stale = false;
    this.renderedRevision = world.revision;
    this.renderRows();
  }

  private requery(): void {
    this.requeried = true;
  }

  private setSchema(types: readonly ComponentInfo[]): void {
    this.schemaTypes = types;
    this.columns = tableColumns(types);
    if (!this.columns.some((c) => c.key === this.query.sortKey)) this.query = defaultQuery();
    const chosen = this.typeFilter.value;
    this.typeFilter.replaceChildren(new Option('any component', ''),
      ...types.filter((t) => t.replicated).map((t) => new Option(`with ${t.name}`, String(t.id))));
    this.typeFilter.value = types.some((t) => String(t.id) === chosen) ? chosen : '';
    this.query.withType = this.typeFilter.value === '' ? null : Number(this.typeFilter.value);
    const template = `7em 5em repeat(${this.columns.length - 2}, minmax(6em, 1fr))`;
    this.head.style.gridTemplateColumns = template;
    this.body.style.setProperty('--columns', template);
    this.pool = [];
    this.body.replaceChildren();
    this.renderHead();
    this.requery();
  }

  private renderHead(): void {
    this.head.replaceChildren(...this.columns.map((c) => {
      const cell = document.createElement('div');
      cell.dataset.key = c.key;
      cell.className = 'cell';
      const arrow = c.key === this.query.sortKey ? (this.query.descending ? ' \u25BC' : ' \u25B2') : '';
      cell.textContent = c.label + arrow;
      cell.title = `sort by ${c.label}`;
      return cell;
    }));
  }

  private renderRows(): void {
    const first = Math.floor(this.viewport.scrollTop / ROW_HEIGHT);
    const shown = Math.max(0, Math.min(this.rows.length - first, Math.ceil(this.viewport.clientHeight / ROW_HEIGHT) + 1));
    while (this.pool.length < shown) {
      const row = document.createElement('div');
      row.className = 'row';
      for (let c = 0; c < this.columns.length; ++c) row.appendChild(document.createElement('div')).className = 'cell';
      this.body.appendChild(row);
      this.pool.push(row);
    }
    this.body.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
    for (let r = 0; r < this.pool.length; ++r) {
      const row = this.pool[r]!;
      row.dataset.first = String(first);
      if (r >= shown) {
        row.hidden = true;
        continue;
      }
      row.hidden = false;
      const index = this.rows[first + r]!;
      row.dataset.index = String(index);
      row.classList.toggle('selected', index === this.selected);
      const cells = row.children;
      for (let c = 0; c < this.columns.length; ++c) {
        const text = cellText(this.world, index, this.columns[c]!);
        const cell = cells[c] as HTMLElement;
        if (cell.textContent !== text) cell.textContent = text;
      }
    }
  }
}

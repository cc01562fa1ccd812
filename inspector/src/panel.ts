// The selected entity: its components, live (re-rendered when one of them changes, at most
// once a frame), and, when the server allows writes, set / remove / destroy.
import { type ComponentInfo, type ComponentValue, Writer, isString } from '@ecsnet/client';
import { type Commands, describeError, parseValues } from './commands';
import { formatField } from './tableModel';
import type { WorldModel } from './world';

export function valueText(value: ComponentValue): string {
  if (typeof value === 'string') return JSON.stringify(value);
  return Object.entries(value).map(([k, v]) => `${k} ${formatField(v)}`).join('  ');
}

function valueJson(value: ComponentValue | undefined): string {
  if (value === undefined) return '';
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? Number(v) : v));
}

const settable = (t: ComponentInfo) => t.replicated && !t.input && t.writer !== Writer.Server;

export class EntityPanel {
  index = -1;
  private dirty = true;
  private writes = false;
  private readonly title: HTMLElement;
  private readonly list: HTMLElement;
  private readonly typeSelect: HTMLSelectElement;
  private readonly valueInput: HTMLTextAreaElement;
  private readonly result: HTMLElement;
  private readonly buttons: HTMLButtonElement[];
  private rows = new Map<number, HTMLElement>();
  private prefilled = ''; // the entity and type whose value the set form holds
  private shownTypes: readonly ComponentInfo[] | null = null;

  constructor(root: HTMLElement, private readonly world: WorldModel, private commands: Commands | null) {
    this.title = root.querySelector('.entity-name')!;
    this.list = root.querySelector('.components')!;
    this.typeSelect = root.querySelector('select[name=set-type]')!;
    this.valueInput = root.querySelector('textarea[name=set-value]')!;
    this.result = root.querySelector('.result')!;
    this.buttons = [...root.querySelectorAll<HTMLButtonElement>('button')];
    this.typeSelect.addEventListener('change', () => { this.prefilled = ''; this.dirty = true; });
    root.querySelector('button[name=set]')!.addEventListener('click', () => this.run('set', async (c, e) => {
      const type = this.world.mirror.types.get(Number(this.typeSelect.value));
      const text = this.valueInput.value;
      const value = isString(type) ? (text.trim().startsWith('"') ? JSON.parse(text) as string : text) : parseValues(text);
      await c.set(e, { [type.name]: value } as never);
      return `set ${e} ${type.name}`;
    }));
    root.querySelector('button[name=remove]')!.addEventListener('click', () => this.run('remove', async (c, e) => {
      const type = this.world.mirror.types.get(Number(this.typeSelect.value));
      await c.remove(e, [type.name]);
      return `removed ${type.name} from ${e}`;
    }));
    root.querySelector('button[name=destroy]')!.addEventListener('click', () => this.run('destroy', async (c, e) => {
      await c.destroy(e);
      return `destroyed ${e}`;
    }));
    this.enable(false);
  }

  setCommands(commands: Commands): void { this.commands = commands; }

  select(index: number): void {
    this.index = index;
    this.dirty = true;
    this.result.textContent = '';
    this.prefilled = '';
  }

  changed(index: number): void {
    if (index === this.index) this.dirty = true;
  }

  enable(writes: boolean): void {
    this.writes = writes;
    for (const b of this.buttons) b.disabled = !writes || this.world.entityAt(this.index) === null;
    this.typeSelect.disabled = !writes;
    this.valueInput.disabled = !writes;
  }

  render(): void {
    if (this.world.types !== this.shownTypes) this.setSchema(this.world.types);
    if (!this.dirty) return;
    this.dirty = false;
    const e = this.world.entityAt(this.index);
    this.title.textContent = e === null ? (this.index < 0 ? 'none (click one)' : `${this.index}: gone`) : `${e.index}:${e.version}`;
    for (const [type, row] of this.rows) {
      const value = e === null ? undefined : this.world.mirror.get(e, type);
      row.hidden = value === undefined;
      const text = value === undefined ? '' : valueText(value);
      const dd = row.lastElementChild as HTMLElement;
      if (dd.textContent !== text) dd.textContent = text;
    }
    // Once per entity and type (the entity may arrive after its selection, e.g. a spawn).
    const key = e === null ? '' : `${e.index}:${e.version}:${this.typeSelect.value}`;
    if (key !== '' && key !== this.prefilled) {
      this.prefilled = key;
      this.prefill();
    }
    this.enable(this.writes);
  }

  private setSchema(types: readonly ComponentInfo[]): void {
    this.shownTypes = types;
    this.rows = new Map();
    this.list.replaceChildren(...types.filter((t) => t.replicated).map((t) => {
      const row = document.createElement('div');
      row.className = 'component';
      const dt = document.createElement('dt');
      dt.textContent = t.name;
      row.append(dt, document.createElement('dd'));
      this.rows.set(t.id, row);
      return row;
    }));
    this.typeSelect.replaceChildren(...types.filter(settable).map((t) => new Option(t.name, String(t.id))));
    this.dirty = true;
  }

  private prefill(): void {
    const e = this.world.entityAt(this.index);
    if (e === null || this.typeSelect.value === '') return;
    const value = this.world.mirror.get(e, Number(this.typeSelect.value));
    this.valueInput.value = typeof value === 'string' ? value : valueJson(value);
  }

  private run(what: string, action: (c: Commands, entity: string) => Promise<string>): void {
    const e = this.world.entityAt(this.index);
    if (this.commands === null || e === null) return;
    this.result.className = 'result';
    this.result.textContent = `${what}...`;
    action(this.commands, `${e.index}:${e.version}`).then(
      (done) => { this.result.textContent = done; },
      (err) => { this.result.className = 'result error'; this.result.textContent = describeError(err); });
  }
}

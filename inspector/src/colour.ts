// Colours of the canvas: by owner (the server's entities one colour, owners cycling through a
// palette of distinct hues) or by component (entities with it bright, the rest dim). A colour
// is a palette index, so the view draws one batch per colour.
import type { WorldModel } from './world';

export const SERVER_COLOUR = '#8a94a6';
export const OWNER_COLOURS = [
  '#e6194b', '#3cb44b', '#ffe119', '#4363d8', '#f58231', '#42d4f4', '#f032e6', '#bfef45', '#fabed4', '#dcbeff', '#ffd8b1',
];
export const WITH_COMPONENT = '#ffb000';
export const WITHOUT_COMPONENT = '#3a4150';

export type ColourMode = { by: 'owner' } | { by: 'component'; type: number };

export function palette(mode: ColourMode): string[] {
  return mode.by === 'owner' ? [SERVER_COLOUR, ...OWNER_COLOURS] : [WITHOUT_COMPONENT, WITH_COMPONENT];
}

// Owner 0 (the server) is 0; owners 1, 2, 3 ... take consecutive palette entries.
export function ownerColour(owner: number): number {
  return owner === 0 ? 0 : 1 + ((owner - 1) % OWNER_COLOURS.length);
}

export function colourOf(world: WorldModel, index: number, mode: ColourMode): number {
  if (mode.by === 'owner') return ownerColour(world.owners[index]!);
  return world.has(index, mode.type) ? 1 : 0;
}

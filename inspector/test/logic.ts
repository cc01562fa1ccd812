// What the unit tests exercise: the page's modules that need no DOM (bundled by the test).
export { bitsAt, numberReader, positionTypes } from '../src/fields';
export { WorldModel } from '../src/world';
export { ownerColour, colourOf, palette, OWNER_COLOURS } from '../src/colour';
export { Camera, pickNearest } from '../src/camera';
export { tableColumns, selectRows, cellText, defaultQuery } from '../src/tableModel';
export { FrameTimes, ByteRate } from '../src/metrics';
export { parseEntity, parseValues, describeError, withFieldNames } from '../src/commands';

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SchemaError, decodeServerFrame, makeValue, readValue, packColumn, unpackValue, invalidValue } from '../../dist/ecsnet.node.js';
import { demoTypes, recorded, welcome, w } from '../support/frames.mjs';

test('Welcome schema: plain, quantized, string and owner-only types', () => {
  const s = decodeServerFrame(welcome()).components;
  assert.equal(s.size, demoTypes.length);
  assert.equal(s.get('name').maxBytes, 8);
  assert.equal(s.get('secret').ownerOnly, true);
  assert.equal(s.get('position').interpolated, true);
  const packed = s.get('packed');
  assert.deepEqual(packed.fields.map((f) => f.bits), [19, 19]);
  assert.equal(packed.fields[0].step, 1 / 128);
});

test('a recorded arena Welcome: quantized positions, owner-only stats, the pilot input type', () => {
  const s = decodeServerFrame(recorded('arena-stream.bin')[0]).components;
  const position = s.get('position');
  assert.ok(position.fields[0].step > 0 && position.fields[0].bits < 32 && position.interpolated);
  assert.equal(s.get('stats').ownerOnly, true);
  const pilot = s.get('pilot');
  assert.equal(pilot.input, true);
  assert.equal(pilot.replicated, false);
});

test('schemas that break the rules are refused', () => {
  const bad = (types) => assert.throws(() => decodeServerFrame(welcome({ types })), SchemaError);
  bad([{ name: 'q', fields: [['a', w.FieldType.Float, 19, -1024, 1024, 1 / 256]] }]); // 20 bits needed
  bad([{ name: 'q', fields: [['a', w.FieldType.Int, 19, -1024, 1024, 1 / 256]] }]); // quantized int
  bad([{ name: 'q', fields: [['a', w.FieldType.Int, 16]] }]); // int in 16 bits
  bad([{ name: 'a', fields: [['x', w.FieldType.Int, 32]] }, { name: 'a', fields: [['x', w.FieldType.Int, 32]] }]);
  bad([{ name: 'bad name', fields: [['x', w.FieldType.Int, 32]] }]);
  bad([{ name: 's', maxBytes: 5000 }]);
  bad([{ name: 'i', input: true, writer: 2, fields: [['x', w.FieldType.Float, 32]] }]);
  bad([{ name: 'n', replicated: false, fields: [['x', w.FieldType.Float, 32]] }]);
  bad([{ name: 'e', fields: [] }]);
  bad([{ name: 'x', id: 3, fields: [['x', w.FieldType.Int, 32]] }]);
});

test('values: little-endian fields, quantized bit packing, padding ignored', () => {
  const s = decodeServerFrame(welcome()).components;
  const position = s.get('position');
  assert.equal(Buffer.from(makeValue(position, { x: 1.5, y: -2 })).toString('hex'), '0000c03f000000c0');
  const packed = s.get('packed');
  const v = makeValue(packed, { a: -1024, b: 1024 }); // q 0 and q_max
  assert.equal(v.length, 5);
  assert.deepEqual(readValue(packed, v), { a: -1024, b: 1024 });
  assert.throws(() => makeValue(packed, { a: 2000, b: 0 }), TypeError);
  const values = [makeValue(packed, { a: 1.5, b: -3.25 }), makeValue(packed, { a: 0, b: 1000 }), makeValue(packed, { a: -7, b: 7 })];
  const column = packColumn(packed, values);
  assert.equal(column.length, Math.ceil((38 * 3) / 8));
  column[column.length - 1] |= 0xc0; // padding bits set by a sender: ignored
  for (let i = 0; i < 3; ++i) assert.deepEqual(unpackValue(packed, column, i), values[i]);
  assert.deepEqual(readValue(packed, values[0]), { a: 1.5, b: -3.25 });
  const flag = s.get('flag');
  assert.deepEqual(readValue(flag, makeValue(flag, { on: true, level: -2 })), { on: true, level: -2 });
  const secret = s.get('secret');
  assert.deepEqual(readValue(secret, makeValue(secret, { code: 2n ** 64n - 1n })), { code: 2n ** 64n - 1n });
  assert.match(invalidValue(position, new Uint8Array([0, 0, 0x80, 0x7f, 0, 0, 0, 0])), /not a finite number/);
});

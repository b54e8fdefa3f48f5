// The JS client agrees with docs/openapi.json: every interface of
// banditd.d.ts tagged @schema has the schema's fields, optional exactly
// where the schema does not require them; OPERATIONS names the document's
// operations; the string unions are the document's enums.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './daemon.mjs';
import { OPERATIONS } from '../banditd.js';

const doc = JSON.parse(readFileSync(join(ROOT, 'docs/openapi.json'), 'utf8'));
const dts = readFileSync(new URL('../banditd.d.ts', import.meta.url), 'utf8');

/** The interfaces tagged @schema: name -> { schema, fields: {name: optional} }.
 * Fields are the members at the interface's own level (inline object
 * types nest braces: their members are not the interface's). */
function tagged() {
  const out = new Map();
  const re = /\/\*\*\s*@schema\s+(\w+)\s*\*\/\s*export interface (\w+)\s*\{/g;
  for (const m of dts.matchAll(re)) {
    let depth = 1;
    let i = m.index + m[0].length;
    let top = '';
    for (; i < dts.length && depth > 0; i++) {
      const c = dts[i];
      if (c === '{') depth++;
      else if (c === '}') depth--;
      else if (depth === 1) top += c;
    }
    const body = top.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    const fields = {};
    for (const f of body.matchAll(/^\s*(\w+)(\?)?\s*:/gm)) fields[f[1]] = f[2] === '?';
    out.set(m[2], { schema: m[1], fields });
  }
  return out;
}

test('every @schema interface has its schema\'s fields and required ones', () => {
  const ifaces = tagged();
  assert.ok(ifaces.size >= 16, `found ${ifaces.size} tagged interfaces`);
  for (const [name, { schema, fields }] of ifaces) {
    const s = doc.components.schemas[schema];
    assert.ok(s, `${name}: no schema ${schema} in docs/openapi.json`);
    const props = Object.keys(s.properties || {}).sort();
    assert.deepEqual(Object.keys(fields).sort(), props, `${name}: fields differ from ${schema}'s`);
    const required = new Set(s.required || []);
    for (const [f, optional] of Object.entries(fields)) {
      assert.equal(optional, !required.has(f),
        `${name}.${f} must be ${required.has(f) ? 'required' : 'optional (?)'} as in ${schema}`);
    }
  }
});

test('OPERATIONS are the document\'s operations', () => {
  const ops = new Map();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (op && op.operationId) ops.set(op.operationId, [method.toUpperCase(), path]);
    }
  }
  for (const [name, [id, method, path]] of Object.entries(OPERATIONS)) {
    assert.deepEqual(ops.get(id), [method, path], `${name}: ${id} is not ${method} ${path}`);
  }
  // and the .d.ts names the same operations
  const declared = dts.match(/export type OperationName =([^;]+);/)[1].match(/'(\w+)'/g)
    .map((s) => s.slice(1, -1)).sort();
  assert.deepEqual(declared, Object.keys(OPERATIONS).sort());
});

test('string unions are the document\'s enums', () => {
  const union = (name) => dts.match(new RegExp(`export type ${name} =([^;]+);`))[1]
    .match(/'(\w+)'/g).map((s) => s.slice(1, -1)).sort();
  assert.deepEqual(union('RewardStatus'),
    [...doc.components.schemas.RewardResult.properties.status.enum].sort());
  assert.deepEqual(union('State'), [...doc.components.schemas.State.enum].sort());
  assert.deepEqual(union('ReleaseStatus'),
    [...doc.components.schemas.ReleaseResult.properties.status.enum].sort());
  assert.deepEqual(union('ServedStatus'),
    [...doc.components.schemas.ServedResult.properties.status.enum].sort());
  const reasons = dts.match(/stop_reason: ([^;]+);/)[1].match(/'([\w-]+)'/g).map((s) => s.slice(1, -1)).sort();
  assert.deepEqual(reasons, doc.components.schemas.StopReason.enum.filter((x) => x !== null).sort());
});

test('a status is either view: the bandits\' union is the schema\'s oneOf', () => {
  const st = doc.components.schemas.Status;
  const refs = st.properties.bandits.items.oneOf.map((x) => x.$ref.split('/').pop()).sort();
  const union = dts.match(/bandits: ([^;]+);/g).map((l) => l.match(/(\w+)\[\]/g) || [])
    .find((names) => names.length > 1).map((n) => n.slice(0, -2)).sort();
  assert.deepEqual(union, refs);
  // the view is told apart as the schema does: blinded present, BlindedBandit items
  assert.deepEqual(st.if, { required: ['blinded'] });
  assert.equal(st.then.properties.bandits.items.$ref, '#/components/schemas/BlindedBandit');
  assert.equal(st.else.properties.bandits.items.$ref, '#/components/schemas/BanditStatus');
  assert.match(dts, /export type BlindedStatus = Status & \{ blinded: true; bandits: BlindedBandit\[\] \}/);
});

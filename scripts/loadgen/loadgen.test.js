// Tests of loadgen.js's stream scanner: node --test scripts/loadgen/loadgen.test.js
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { StreamScanner, startTag, percentile } = require('./loadgen.js');

const header = `<?xml version='1.0'?><stream:stream xmlns='jabber:component:accept' xmlns:stream='http://etherx.jabber.org/streams' to='agents.example'>`;
// Top-level elements that test what the scanner must get right: a '>' and
// a '/>' inside attribute values, text with '>' in it, a self-closing
// element, nested elements of the stanza's own name, CDATA and a comment
// holding markup, multi-byte UTF-8, and for the fast path, elements whose
// names start with the stanza's, and one of its own name nested.
const elements = [
  `<handshake>0123abcd</handshake>`,
  `<iq type='result' id='a>1' from="x/>y@agents.example" to='s@home.example/r'><query xmlns='q' note="a > b"/></iq>`,
  `<presence/>`,
  `<iq type='result' id='n'><iqx/><iqy a='x/>y'>t &gt; </iqy><query/></iq >`,
  `<iq type='result' id='m'><iq-not/><iq><iq/></iq></iq>`,
  `<presence from='a@b' type='unavailable' />`,
  `<message to='é@home.example'><body>1 > 0, ça va ✓ 🙂</body><forwarded xmlns='urn:xmpp:forward:0'><message><body>inner</body></message></forwarded></message>`,
  `<iq type='get' id='c'><x><![CDATA[</iq><iq>]]></x><!-- </iq> --><y/></iq>`,
  `<stream:error><not-authorized xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error>`,
];
const stream = Buffer.from(header + elements.join(' \n ') + '\t</stream:stream>', 'utf8');

function scan(chunks) {
  const got = { header: '', elements: [], ended: 0 };
  const s = new StreamScanner((h) => { got.header = h; }, (el) => got.elements.push(el), () => got.ended++);
  for (const c of chunks) s.push(c);
  return got;
}

function check(got) {
  assert.strictEqual(Buffer.from(got.header, 'latin1').toString('utf8'), header.slice(header.indexOf('<stream:stream')));
  assert.deepStrictEqual(got.elements.map((e) => Buffer.from(e, 'latin1').toString('utf8')), elements);
  assert.strictEqual(got.ended, 1);
}

test('one chunk', () => check(scan([stream])));

test('every split into two chunks', () => {
  for (let i = 1; i < stream.length; i++) check(scan([stream.subarray(0, i), stream.subarray(i)]));
});

test('one byte at a time', () => {
  const chunks = [];
  for (let i = 0; i < stream.length; i++) chunks.push(stream.subarray(i, i + 1));
  check(scan(chunks));
});

test('random chunks', () => {
  let seed = 26;
  const rand = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return 1 + (seed % n);
  };
  for (let r = 0; r < 500; r++) {
    const chunks = [];
    for (let i = 0; i < stream.length;) {
      const n = rand(40);
      chunks.push(stream.subarray(i, i + n));
      i += n;
    }
    check(scan(chunks));
  }
});

test('a DTD is refused', () => {
  const s = new StreamScanner(() => {}, () => {}, () => {});
  assert.throws(() => s.push(Buffer.from(header + '<!DOCTYPE x [<!ENTITY a "b">]>')));
});

test('start tag attributes', () => {
  const t = startTag(`<iq type="result" id='a&amp;b&apos;&#x41;&#66;' from='x/>y' xmlns:foo='z'>`);
  assert.strictEqual(t.name, 'iq');
  assert.deepStrictEqual(t.attrs, { type: 'result', id: "a&b'AB", from: 'x/>y', 'xmlns:foo': 'z' });
  const p = startTag(`<stream:stream to='d' id="1">`);
  assert.strictEqual(p.name, 'stream');
  assert.strictEqual(p.qname, 'stream:stream');
  assert.strictEqual(p.attrs.to, 'd');
});

test('percentiles, nearest rank', () => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.strictEqual(percentile(xs, 0.5), 50);
  assert.strictEqual(percentile(xs, 0.99), 99);
  assert.strictEqual(percentile([7], 0.99), 7);
  assert.strictEqual(percentile([], 0.5), 0);
});

#!/usr/bin/env node
// loadgen: an independent XEP-0114 load generator, a second opinion on
// the gateway's ceiling (issue 26). It shares no code with agentgw or its
// Go benchmarks, and uses only Node's standard library.
//
// It is the server side of a component connection (jabber:component:accept):
// it listens on loopback, takes one component's stream, checks its
// handshake (SHA-1 hex of stream id + secret), and then keeps -in-flight
// disco#info requests outstanding to --to, each slot from a sender JID of
// its own, sending a slot's next request as its answer arrives. Every
// answer is matched to its request by id (and by from/to); results and
// errors are counted apart. What the component sends of its own (pings,
// disco#info to the server, presence) is answered as a server would, or
// ignored, so it never waits on us.
//
// The run: -idle seconds with no load, -warmup seconds of load not
// counted, then a window of -duration seconds (or -count answers) that
// is, then no new requests while the
// outstanding ones drain. At the end it prints one line on stdout:
//
//	label=gateway rate=23456 window_answers=234560 window_s=10.000 sent=... answered=...
//	results=... errors=0 bad=0 unmatched=0 misrouted=0 lost=0 p50_us=... p99_us=... answer_bytes=...
//
// and exits 0 only if the run was clean: no error, no bad result (one
// without --expect), no unmatched or misrouted answer, none lost.
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const { performance } = require('node:perf_hooks');

const usage = `usage: node loadgen.js -domain D -secret-file F -to JID [flags]
  -listen HOST:PORT     where to listen (default 127.0.0.1:0)
  -port-file FILE       write the port there once listening
  -domain DOMAIN        the component's domain (its stream's 'to')
  -secret-file FILE     the component secret, on its first line
  -to JID               the JID that the requests go to
  -in-flight N          requests outstanding at any time (default 64)
  -senders N            distinct sender localparts (default: in-flight)
  -sender-domains LIST  comma-separated sender domains (default home.example)
  -idle S               seconds between the handshake and the load (default 0)
  -warmup S             seconds of load not counted (default 1)
  -duration S           seconds counted (default 10)
  -count N              count N answers instead of a duration
  -expect TEXT          a result must contain TEXT, else it counts as bad
  -capture FILE         write the first result's payload (the iq's children) to FILE
  -label NAME           the run's name in the result line (default run)
  -accept-timeout S     give up if no component connects in S (default 30)
  -drain-timeout S      give up on outstanding answers after S (default 10)
`;

function parseArgs(argv) {
  const o = {
    listen: '127.0.0.1:0', portFile: '', domain: '', secretFile: '', to: '',
    inFlight: 64, senders: 0, senderDomains: 'home.example', idle: 0, warmup: 1,
    duration: 10, count: 0, expect: '', capture: '', label: 'run',
    acceptTimeout: 30, drainTimeout: 10,
  };
  const names = {
    '-listen': 'listen', '-port-file': 'portFile', '-domain': 'domain',
    '-secret-file': 'secretFile', '-to': 'to', '-in-flight': 'inFlight',
    '-senders': 'senders', '-sender-domains': 'senderDomains', '-idle': 'idle', '-warmup': 'warmup',
    '-duration': 'duration', '-count': 'count', '-expect': 'expect',
    '-capture': 'capture', '-label': 'label', '-accept-timeout': 'acceptTimeout',
    '-drain-timeout': 'drainTimeout',
  };
  for (let i = 0; i < argv.length; i++) {
    const key = names[argv[i].replace(/^--/, '-')];
    if (!key || i + 1 >= argv.length) fail(`bad argument ${argv[i]}\n${usage}`, 2);
    const v = argv[++i];
    if (typeof o[key] === 'number') {
      const n = Number(v);
      if (!Number.isFinite(n) || n < 0) fail(`${argv[i - 1]}: not a number: ${v}`, 2);
      o[key] = n;
    } else {
      o[key] = v;
    }
  }
  if (!o.domain || !o.secretFile || !o.to) fail(usage, 2);
  if (o.inFlight < 1 || !Number.isInteger(o.inFlight)) fail('-in-flight: at least 1', 2);
  if (!o.senders) o.senders = o.inFlight;
  o.to = bytes(o.to);
  o.domain = bytes(o.domain);
  o.expect = bytes(o.expect);
  o.senderDomains = bytes(o.senderDomains);
  return o;
}

function fail(msg, code) {
  process.stderr.write(`loadgen: ${msg.replace(/\n?$/, '\n')}`);
  process.exit(code || 1);
}

function log(msg) {
  process.stderr.write(`loadgen: ${msg}\n`);
}

// Everything read and written is a byte string: a JS string of one char
// per byte (latin1), so nothing is decoded or encoded on the hot path and
// a multi-byte character never splits. bytes turns text into one.
function bytes(s) {
  return Buffer.from(s, 'utf8').toString('latin1');
}

// XML escaping of attribute values we write (single-quoted).
function esc(s) {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
    .replace(/'/g, '&apos;').replace(/"/g, '&quot;');
}

// unescape decodes the five predefined entities and character references.
function unescape(s) {
  if (s.indexOf('&') < 0) return s;
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|apos|quot);/g, (_, e) => {
    switch (e) {
      case 'amp': return '&';
      case 'lt': return '<';
      case 'gt': return '>';
      case 'apos': return "'";
      case 'quot': return '"';
      default: return bytes(String.fromCodePoint(e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10)));
    }
  });
}

// tagEnd matches the rest of a start tag after its '<', up to the '>' that
// ends it: a '>' inside a quoted attribute value does not. (A regular
// expression runs twice as fast as a loop over the characters here.)
const tagEnd = /[^'">]*(?:(?:'[^']*'|"[^"]*")[^'">]*)*>/y;

// maxPending bounds what one top-level element, or one unfinished piece of
// markup, may hold in the scanner: a stream that never closes one is cut.
const maxPending = 16 << 20;

const attrRe = /([^\s=/<>]+)\s*=\s*(?:'([^']*)'|"([^"]*)")/g;

// startTag parses a start tag's name (local part) and attributes.
function startTag(tag) {
  const m = /^<([^\s/>]+)/.exec(tag);
  const qname = m ? m[1] : '';
  const name = qname.slice(qname.lastIndexOf(':') + 1);
  const attrs = {};
  attrRe.lastIndex = m ? m[0].length : 1;
  let a;
  while ((a = attrRe.exec(tag)) !== null) {
    attrs[a[1]] = unescape(a[2] !== undefined ? a[2] : a[3]);
  }
  return { name, qname, attrs };
}

function isSpace(c) {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

// StreamScanner splits an XMPP stream into its header and its top-level
// elements, across any chunk boundaries. It tracks only what XML allows in
// a stream: tags (quote-aware, since '>' may appear in attribute values),
// the XML declaration, comments and CDATA sections, and text, which it
// skips. Bytes are read as latin1, one char per byte: all markup is ASCII,
// and a multi-byte character split between chunks is never cut.
class StreamScanner {
  constructor(onHeader, onElement, onEnd) {
    this.onHeader = onHeader;
    this.onElement = onElement;
    this.onEnd = onEnd;
    this.buf = '';
    this.pos = 0; // where scanning resumes in buf
    this.depth = 0; // 1 inside the stream, 2 inside a top-level element
    this.start = -1; // where the current top-level element starts in buf
    this.special = -1; // the next '<!' or '<?' in the chunk being scanned
    this.qname = ''; // the last top-level element's name, and its tags
    this.open = '';
    this.close = '';
  }

  // wholeElement is the fast path: where the top-level element whose start
  // tag spans lt to from ends, found by searching instead of tag by tag,
  // or -1 if it cannot tell (the element is not all here, or holds a
  // comment, CDATA, a processing instruction or an element of its own
  // name). The search is exact otherwise: '<' cannot appear in text or in
  // an attribute value, so every '<' between is markup, and with no nested
  // element of the same name the first end tag of that name is its own.
  wholeElement(s, lt, from) {
    let n = lt + 1;
    while (n < from) {
      const c = s.charCodeAt(n);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x2f || c === 0x3e) break;
      n++;
    }
    const qname = s.slice(lt + 1, n);
    if (qname !== this.qname) {
      this.qname = qname;
      this.open = '<' + qname;
      this.close = '</' + qname;
    }
    let e = from;
    let gt;
    for (;;) {
      e = s.indexOf(this.close, e);
      if (e < 0) return -1;
      gt = e + this.close.length;
      while (gt < s.length && isSpace(s.charCodeAt(gt))) gt++;
      if (gt >= s.length) return -1;
      if (s.charCodeAt(gt) === 0x3e) break;
      e = gt; // the end tag of another name (</iqx>)
    }
    if (this.special < from) {
      const a = s.indexOf('<!', from);
      const b = s.indexOf('<?', from);
      this.special = a < 0 ? (b < 0 ? Infinity : b) : (b < 0 ? a : Math.min(a, b));
    }
    if (this.special < e) return -1;
    for (let k = s.indexOf(this.open, from); k >= 0 && k < e; k = s.indexOf(this.open, k + 1)) {
      const c = s.charCodeAt(k + this.open.length);
      if (isSpace(c) || c === 0x2f || c === 0x3e) return -1; // nested
    }
    return gt + 1;
  }

  push(chunk) {
    const s = this.buf.length ? this.buf + chunk.toString('latin1') : chunk.toString('latin1');
    let i = this.pos;
    this.special = -1;
    for (;;) {
      const lt = s.indexOf('<', i);
      if (lt < 0) {
        i = s.length;
        break;
      }
      if (lt + 1 >= s.length) {
        i = lt;
        break;
      }
      const c = s.charCodeAt(lt + 1);
      if (c === 0x2f) { // '</…>'
        const gt = s.indexOf('>', lt + 2);
        if (gt < 0) {
          i = lt;
          break;
        }
        this.depth--;
        i = gt + 1;
        if (this.depth === 1) {
          const el = s.slice(this.start, i);
          this.start = -1;
          this.onElement(el);
        } else if (this.depth <= 0) {
          this.onEnd();
          this.buf = '';
          this.pos = 0;
          return;
        }
      } else if (c === 0x3f) { // '<?…?>'
        const end = s.indexOf('?>', lt + 2);
        if (end < 0) {
          i = lt;
          break;
        }
        i = end + 2;
      } else if (c === 0x21) { // '<!--…-->' or '<![CDATA[…]]>'
        if (s.length - lt < 9) {
          i = lt;
          break;
        }
        let open, close;
        if (s.startsWith('<!--', lt)) {
          open = 4;
          close = '-->';
        } else if (s.startsWith('<![CDATA[', lt)) {
          open = 9;
          close = ']]>';
        } else {
          throw new Error('a DTD or an unknown markup declaration in the stream');
        }
        const end = s.indexOf(close, lt + open);
        if (end < 0) {
          i = lt;
          break;
        }
        i = end + close.length;
      } else { // a start tag
        tagEnd.lastIndex = lt + 1;
        if (!tagEnd.test(s)) { // it is not all here yet
          i = lt;
          break;
        }
        const j = tagEnd.lastIndex - 1;
        const empty = s.charCodeAt(j - 1) === 0x2f;
        i = j + 1;
        if (this.depth === 0) {
          this.depth = 1;
          this.onHeader(s.slice(lt, i));
        } else if (this.depth === 1) {
          const end = empty ? i : this.wholeElement(s, lt, i);
          if (end > 0) {
            i = end;
            this.onElement(s.slice(lt, i));
          } else {
            this.start = lt;
            this.depth = 2;
          }
        } else if (!empty) {
          this.depth++;
        }
      }
    }
    // Keep the element in progress (or the incomplete markup) for the next chunk.
    const keep = this.start >= 0 ? this.start : i;
    if (s.length - keep > maxPending) throw new Error(`an element of more than ${maxPending} bytes`);
    this.buf = s.slice(keep);
    this.pos = i - keep;
    if (this.start >= 0) this.start = 0;
  }
}

// percentile of a sorted array, nearest rank.
function percentile(sorted, p) {
  if (sorted.length === 0) return 0;
  const k = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return sorted[k];
}

function main() {
  const o = parseArgs(process.argv.slice(2));
  const secret = fs.readFileSync(o.secretFile, 'utf8').split('\n')[0].replace(/\r$/, '');
  if (!secret) fail(`${o.secretFile}: empty secret`);
  const streamID = crypto.randomBytes(12).toString('hex');
  const domains = o.senderDomains.split(',').map((d) => d.trim()).filter(Boolean);

  // One sender per slot; a slot has at most one request outstanding.
  const senders = [];
  const prefixes = [];
  for (let k = 0; k < o.inFlight; k++) {
    const n = k % o.senders;
    const from = `sender-${String(n).padStart(2, '0')}@${domains[n % domains.length]}/r`;
    senders.push(from);
    prefixes.push(`<iq type='get' from='${esc(from)}' to='${esc(o.to)}' id='`);
  }
  const suffix = `'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>`;

  const pending = new Map(); // id → slot
  const sentAt = new Float64Array(o.inFlight);
  let seq = 0;
  let phase = 'handshake'; // handshake, idle, warmup, window, drain, done
  let windowStart = 0;
  let windowEnd = 0;
  let windowAnswers = 0;
  let lat = new Float64Array(1 << 16); // latencies of the window, ms
  const st = {
    sent: 0, answered: 0, results: 0, errors: 0, bad: 0, unmatched: 0,
    misrouted: 0, served: 0, ignored: 0, bytes: 0, firstError: '',
  };
  let conn = null;
  let out = [];

  function request(slot, now) {
    const id = 'lg' + (seq++).toString(36);
    pending.set(id, slot);
    sentAt[slot] = now;
    st.sent++;
    out.push(prefixes[slot], id, suffix);
  }

  function flush() {
    if (out.length && conn) {
      conn.write(out.join(''), 'latin1');
      out = [];
    }
  }

  // serve answers what the component sends that is not an answer to us,
  // as a server would: a ping and a disco#info to the server get results,
  // any other get or set service-unavailable; presence and messages are
  // dropped.
  function serve(el, tag) {
    const a = tag.attrs;
    if (tag.name !== 'iq' || (a.type !== 'get' && a.type !== 'set')) {
      st.ignored++;
      return;
    }
    st.served++;
    const head = `<iq type='%t' id='${esc(a.id || '')}' from='${esc(a.to || '')}' to='${esc(a.from || '')}'`;
    if (el.includes('urn:xmpp:ping')) {
      out.push(head.replace('%t', 'result') + '/>');
    } else if (a.type === 'get' && el.includes('http://jabber.org/protocol/disco#info')) {
      out.push(head.replace('%t', 'result') + `><query xmlns='http://jabber.org/protocol/disco#info'>` +
        `<identity category='server' type='im' name='loadgen'/>` +
        `<feature var='http://jabber.org/protocol/disco#info'/></query></iq>`);
    } else {
      out.push(head.replace('%t', 'error') + `><error type='cancel'><service-unavailable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>`);
    }
  }

  function onElement(el) {
    tagEnd.lastIndex = 1;
    tagEnd.test(el);
    const tag = startTag(el.slice(0, tagEnd.lastIndex));
    if (phase === 'handshake') {
      if (tag.name !== 'handshake') {
        streamError('not-authorized', `expected <handshake/>, got <${tag.qname}>`);
        return;
      }
      const text = el.endsWith('/>') ? '' : el.slice(el.indexOf('>') + 1, el.lastIndexOf('<')).trim().toLowerCase();
      const want = crypto.createHash('sha1').update(streamID + secret).digest('hex');
      if (text !== want) {
        streamError('not-authorized', 'bad handshake');
        return;
      }
      conn.write('<handshake/>', 'latin1');
      log(`component ${o.domain} authenticated`);
      phase = 'idle';
      setTimeout(startLoad, o.idle * 1000);
      return;
    }
    const a = tag.attrs;
    if (tag.name !== 'iq' || (a.type !== 'result' && a.type !== 'error')) {
      serve(el, tag);
      return;
    }
    const slot = pending.get(a.id);
    if (slot === undefined) {
      st.unmatched++;
      note(`unmatched answer ${el.slice(0, 200)}`);
      return;
    }
    pending.delete(a.id);
    st.answered++;
    const now = performance.now();
    if (a.from !== o.to || a.to !== senders[slot]) {
      st.misrouted++;
      note(`misrouted answer ${el.slice(0, 200)}`);
    }
    if (a.type === 'error') {
      st.errors++;
      note(`error answer ${el.slice(0, 300)}`);
    } else {
      st.results++;
      if (o.expect && !el.includes(o.expect)) {
        st.bad++;
        note(`result without ${o.expect}: ${el.slice(0, 300)}`);
      }
      if (o.capture) {
        const body = el.endsWith('/>') ? '' : el.slice(el.indexOf('>') + 1, el.lastIndexOf('</'));
        fs.writeFileSync(o.capture, Buffer.from(body, 'latin1'), { mode: 0o600 });
        o.capture = '';
      }
    }
    st.bytes += el.length;
    if (phase === 'window') {
      if (now >= windowEnd && !o.count) {
        endWindow(now);
      } else {
        windowAnswers++;
        if (windowAnswers > lat.length) {
          const grown = new Float64Array(lat.length * 2);
          grown.set(lat);
          lat = grown;
        }
        lat[windowAnswers - 1] = now - sentAt[slot];
        if (o.count && windowAnswers >= o.count) endWindow(now);
      }
    }
    if (phase === 'warmup' || phase === 'window') {
      request(slot, now);
    } else if (phase === 'drain' && pending.size === 0) {
      finish();
    }
  }

  function note(msg) {
    if (!st.firstError) st.firstError = msg;
  }

  function startLoad() {
    if (phase !== 'idle') return;
    log(`${o.inFlight} in flight to ${o.to}`);
    phase = 'warmup';
    const now = performance.now();
    for (let k = 0; k < o.inFlight; k++) request(k, now);
    flush();
    setTimeout(() => {
      phase = 'window';
      windowStart = performance.now();
      windowEnd = o.count ? Infinity : windowStart + o.duration * 1000;
      if (!o.count) {
        // The answers end the window; this timer ends it if they stop.
        setTimeout(() => {
          if (phase === 'window') endWindow(performance.now());
        }, o.duration * 1000 + 50).unref();
      }
    }, o.warmup * 1000);
  }

  function endWindow(now) {
    windowEnd = Math.min(now, windowEnd);
    phase = 'drain';
    if (pending.size === 0) {
      finish();
      return;
    }
    setTimeout(() => finish(), o.drainTimeout * 1000).unref();
  }

  function finish() {
    if (phase === 'done') return;
    phase = 'done';
    flush();
    const secs = windowStart ? (windowEnd - windowStart) / 1000 : 0;
    const sorted = lat.subarray(0, windowAnswers).sort();
    const lost = pending.size;
    const fields = {
      label: o.label,
      rate: secs > 0 ? Math.round(windowAnswers / secs) : 0,
      window_answers: windowAnswers,
      window_s: secs.toFixed(3),
      sent: st.sent,
      answered: st.answered,
      results: st.results,
      errors: st.errors,
      bad: st.bad,
      unmatched: st.unmatched,
      misrouted: st.misrouted,
      lost,
      p50_us: Math.round(percentile(sorted, 0.5) * 1000),
      p99_us: Math.round(percentile(sorted, 0.99) * 1000),
      answer_bytes: st.answered ? Math.round(st.bytes / st.answered) : 0,
      served: st.served,
      ignored: st.ignored,
      // The generator's own CPU (user + system) per answer, µs.
      gen_cpu_us: st.answered ? ((cpu) => ((cpu.user + cpu.system) / st.answered).toFixed(1))(process.cpuUsage()) : 0,
    };
    process.stdout.write(Object.entries(fields).map(([k, v]) => `${k}=${v}`).join(' ') + '\n');
    const clean = st.errors === 0 && st.bad === 0 && st.unmatched === 0 && st.misrouted === 0 && lost === 0 && windowAnswers > 0;
    if (!clean && st.firstError) log(`first problem: ${st.firstError}`);
    if (conn) conn.end('</stream:stream>', 'latin1');
    server.close();
    process.exitCode = clean ? 0 : 1;
    setTimeout(() => process.exit(), 500).unref();
  }

  function streamError(cond, why) {
    log(why);
    conn.end(`<stream:error><${cond} xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error></stream:stream>`, 'latin1');
    server.close();
    process.exitCode = 1;
  }

  function onHeader(tag) {
    const t = startTag(tag);
    if (t.name !== 'stream' || t.attrs.xmlns !== 'jabber:component:accept') {
      conn.write(`<?xml version='1.0'?><stream:stream xmlns='jabber:component:accept' xmlns:stream='http://etherx.jabber.org/streams' id='${streamID}'>`, 'latin1');
      streamError('invalid-namespace', `not a component stream: ${tag}`);
      return;
    }
    conn.write(`<?xml version='1.0'?><stream:stream xmlns='jabber:component:accept' xmlns:stream='http://etherx.jabber.org/streams' from='${esc(o.domain)}' id='${streamID}'>`, 'latin1');
    if (t.attrs.to !== o.domain) streamError('host-unknown', `component asked for ${t.attrs.to}, not ${o.domain}`);
  }

  const server = net.createServer((c) => {
    if (conn) { // one component at a time: a reconnect after the run is refused
      c.destroy();
      return;
    }
    conn = c;
    clearTimeout(acceptTimer);
    c.setNoDelay(true);
    const scanner = new StreamScanner(onHeader, (el) => {
      onElement(el);
    }, () => {
      if (phase !== 'done') {
        log(`the component closed its stream in phase ${phase}`);
        finish();
      }
    });
    c.on('data', (chunk) => {
      try {
        scanner.push(chunk);
      } catch (e) {
        streamError('not-well-formed', e.message);
        return;
      }
      flush();
    });
    c.on('error', (e) => log(`connection: ${e.message}`));
    c.on('close', () => {
      if (phase !== 'done') {
        log(`the connection closed in phase ${phase}`);
        if (phase === 'handshake') process.exit(1);
        finish();
      }
    });
  });
  const [host, port] = splitHostPort(o.listen);
  server.listen(port, host, () => {
    const p = server.address().port;
    if (o.portFile) { // whole or not at all, for a script that waits for it
      fs.writeFileSync(`${o.portFile}.tmp`, `${p}\n`, { mode: 0o600 });
      fs.renameSync(`${o.portFile}.tmp`, o.portFile);
    }
    log(`listening on ${host}:${p}`);
  });
  const acceptTimer = setTimeout(() => fail(`no component connected within ${o.acceptTimeout}s`), o.acceptTimeout * 1000);
}

function splitHostPort(s) {
  const i = s.lastIndexOf(':');
  if (i < 0) fail(`-listen: ${s} is not HOST:PORT`, 2);
  return [s.slice(0, i).replace(/^\[|\]$/g, ''), Number(s.slice(i + 1))];
}

module.exports = { StreamScanner, startTag, percentile };

if (require.main === module) main();

// ledgermq console: the little the pages need beyond HTML. The server
// renders (and escapes) every page and fragment; this script only swaps a
// fragment in, draws the live chart from JSON as SVG, and shows the
// search fields of the chosen mode. It never builds HTML from data.
(function () {
  'use strict';

  var refresh = parseInt(document.body.getAttribute('data-refresh') || '0', 10);

  // A page's #live block (the cluster page) reloads itself from its
  // data-src, a server-rendered fragment.
  function liveBlock() {
    var live = document.getElementById('live');
    if (!live || !(refresh > 0)) {
      return;
    }
    var busy = false;
    setInterval(function () {
      if (busy) {
        return;
      }
      busy = true;
      fetch(live.getAttribute('data-src'), { credentials: 'same-origin' })
        .then(function (resp) { return resp.text(); })
        .then(function (html) {
          var doc = new DOMParser().parseFromString(html, 'text/html');
          var next = doc.getElementById('live');
          if (next) {
            next = document.importNode(next, true);
            live.replaceWith(next);
            live = next;
          }
        })
        .catch(function (err) {
          live.setAttribute('data-stale', String(err));
        })
        .finally(function () { busy = false; });
    }, refresh);
  }

  var SVG = 'http://www.w3.org/2000/svg';
  var PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
  var W = 800, H = 220, L = 56, R = 10, T = 10, B = 24;

  function el(name, attrs, text) {
    var e = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) {
      e.textContent = text;
    }
    return e;
  }

  function niceMax(v) {
    if (!(v > 0)) {
      return 1;
    }
    var p = Math.pow(10, Math.floor(Math.log10(v)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (v <= steps[i] * p) {
        return steps[i] * p;
      }
    }
    return 10 * p;
  }

  function clock(ms) {
    return new Date(ms).toISOString().slice(11, 19);
  }

  // draw renders series (name, values, missing) over times into svg and
  // lists them, with their last value, in legend.
  function draw(svg, legend, times, series) {
    while (svg.firstChild) {
      svg.removeChild(svg.firstChild);
    }
    var top = 0;
    series.forEach(function (s) {
      s.values.forEach(function (v, i) {
        if (!(s.missing && s.missing[i])) {
          top = Math.max(top, v);
        }
      });
    });
    top = niceMax(top);
    var n = times.length;
    function x(i) { return L + (n > 1 ? i * (W - L - R) / (n - 1) : 0); }
    function y(v) { return H - B - v * (H - T - B) / top; }
    for (var g = 0; g <= 4; g++) {
      var gv = top * g / 4;
      svg.appendChild(el('line', { x1: L, x2: W - R, y1: y(gv), y2: y(gv), stroke: '#ddd' }));
      svg.appendChild(el('text', { x: L - 6, y: y(gv) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#555' },
        gv >= 100 ? gv.toFixed(0) : String(Math.round(gv * 100) / 100)));
    }
    if (n > 0) {
      svg.appendChild(el('text', { x: L, y: H - 6, 'font-size': 11, fill: '#555' }, clock(times[0])));
      svg.appendChild(el('text', { x: W - R, y: H - 6, 'text-anchor': 'end', 'font-size': 11, fill: '#555' }, clock(times[n - 1])));
    }
    while (legend.firstChild) {
      legend.removeChild(legend.firstChild);
    }
    series.forEach(function (s, k) {
      var color = PALETTE[k % PALETTE.length];
      var d = '', pen = false;
      s.values.forEach(function (v, i) {
        if (s.missing && s.missing[i]) {
          pen = false;
          return;
        }
        d += (pen ? ' L' : ' M') + x(i).toFixed(1) + ' ' + y(v).toFixed(1);
        pen = true;
      });
      if (d) {
        svg.appendChild(el('path', { d: d.trim(), fill: 'none', stroke: color, 'stroke-width': 2, 'data-series': s.name }));
      }
      var li = document.createElement('li');
      var sw = document.createElementNS(SVG, 'svg');
      sw.setAttribute('width', '12');
      sw.setAttribute('height', '12');
      sw.appendChild(el('rect', { width: 12, height: 12, fill: color }));
      li.appendChild(sw);
      var last = s.values.length ? s.values[s.values.length - 1] : 0;
      var down = s.missing && s.missing[s.missing.length - 1];
      li.appendChild(document.createTextNode(' ' + s.name + ': ' + (down ? 'no answer' : (Math.round(last * 10) / 10))));
      legend.appendChild(li);
    });
  }

  function liveChart() {
    var rate = document.getElementById('chart-rate');
    var lag = document.getElementById('chart-lag');
    if (!rate || !lag) {
      return;
    }
    var status = document.getElementById('chart-status');
    function tick() {
      fetch('/api/metrics', { credentials: 'same-origin' })
        .then(function (resp) { return resp.json(); })
        .then(function (m) {
          draw(rate, document.getElementById('legend-rate'), m.times, [m.sendRate, m.consumeRate]);
          draw(lag, document.getElementById('legend-lag'), m.times, m.applyLag);
          status.textContent = m.error ? 'last sample failed: ' + m.error : m.times.length + ' points';
          rate.setAttribute('data-points', String(m.times.length));
        })
        .catch(function (err) { status.textContent = 'cannot read the samples: ' + err; });
    }
    tick();
    setInterval(tick, refresh > 0 ? refresh : 2000);
  }

  // The search form shows the fields of the chosen mode.
  function searchModes() {
    var form = document.getElementById('search-form');
    if (!form) {
      return;
    }
    function show() {
      var checked = form.querySelector('input[name=mode]:checked');
      var mode = checked ? checked.value : 'id';
      form.querySelectorAll('label[class^=mode-]').forEach(function (label) {
        label.hidden = !label.classList.contains('mode-' + mode);
      });
    }
    form.querySelectorAll('input[name=mode]').forEach(function (r) { r.addEventListener('change', show); });
    show();
  }

  liveBlock();
  liveChart();
  searchModes();
})();

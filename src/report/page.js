// vf report: renders a unit's events when its row is opened (lazily, from
// the JSON embedded next to it), and shows an event's raw lines on demand.
// Everything is put in the page as text (textContent), never as markup.
(function () {
  'use strict';
  function trace(r) {
    if (r[0] === 0) return '[-]';
    return r[0] === r[1] ? '[line ' + r[0] + ']' : '[lines ' + r[0] + '-' + r[1] + ']';
  }
  function rawText(data, r) {
    var lines = [];
    for (var n = r[0]; n > 0 && n <= r[1]; n++) {
      if (Object.prototype.hasOwnProperty.call(data.raw, n)) lines.push(n + ': ' + data.raw[n]);
    }
    return lines.length ? lines.join('\n') : '(these lines are not embedded: open the raw log)';
  }
  function render(d) {
    if (d.dataset.rendered) return;
    d.dataset.rendered = '1';
    var island = document.getElementById('ev' + d.dataset.idx);
    var data = JSON.parse(island.textContent);
    var list = d.querySelector('.ev-list');
    data.events.forEach(function (ev) {
      var row = document.createElement('div');
      row.className = 'ev';
      row.dataset.kind = ev.kind;
      var link = document.createElement('a');
      link.href = '#';
      link.className = 'raw-link';
      link.title = 'the raw lines ' + trace(ev.rawRange) + ' of the raw log';
      link.textContent = 'raw lines';
      if (ev.rawRange[0] === 0) link.hidden = true;
      var text = document.createElement('pre');
      text.textContent = ev.text;
      var raw = document.createElement('pre');
      raw.className = 'raw';
      raw.hidden = true;
      link.addEventListener('click', function (e) {
        e.preventDefault();
        if (!raw.dataset.filled) {
          raw.textContent = rawText(data, ev.rawRange);
          raw.dataset.filled = '1';
        }
        raw.hidden = !raw.hidden;
      });
      row.appendChild(link);
      row.appendChild(text);
      row.appendChild(raw);
      list.appendChild(row);
    });
  }
  document.querySelectorAll('details.unit').forEach(function (d) {
    d.addEventListener('toggle', function () {
      if (d.open) render(d);
    });
    if (d.open) render(d);
  });
  document.querySelectorAll('#gantt g.bar').forEach(function (g) {
    g.addEventListener('click', function () {
      var d = document.getElementById('u' + g.dataset.idx);
      if (!d) return;
      d.open = true;
      d.scrollIntoView({ block: 'start' });
    });
  });
})();

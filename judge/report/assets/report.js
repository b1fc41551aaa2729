/* judgeflow report: draws the charts (plotly.js, inlined) from the JSON block, sorts and
   filters the case table, opens a case when a link points into it. Static code: no value
   of the run is ever turned into script; the data is read with JSON.parse. */
(function () {
  "use strict";

  function drawCharts() {
    var block = document.getElementById("report-figures");
    var figures = JSON.parse(block.textContent);
    /* No mode bar: drag zooms, a double click resets, hovering names the case. */
    var config = {displaylogo: false, displayModeBar: false, responsive: true,
                  showLink: false, showSendToCloud: false, showEditInChartStudio: false};
    var drawn = figures.map(function (fig) {
      var el = document.getElementById(fig.id);
      if (!el) {
        console.error("no element for chart " + fig.id);
        return Promise.resolve();
      }
      el.style.height = String(fig.layout.height) + "px";
      return Plotly.newPlot(el, fig.data, fig.layout, config);
    });
    Promise.all(drawn).then(function () {
      document.documentElement.setAttribute("data-charts", String(figures.length));
    }, function (err) {
      console.error("a chart failed to draw", err);
    });
  }

  function cellKey(row, col) {
    var cell = row.cells[col];
    return cell ? (cell.getAttribute("data-sort") || "") : "";
  }

  function setupTable() {
    var table = document.getElementById("cases-table");
    if (!table) { return; }
    var body = table.tBodies[0];
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      function sort() {
        var numeric = th.getAttribute("data-type") === "number";
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellKey(a, col), y = cellKey(b, col), order = 0;
          if (numeric) {
            if (x === "" || y === "") {
              order = (x === "") - (y === "");  /* blanks last, either direction */
              if (order !== 0) { return order; }
            } else {
              order = (parseFloat(x) - parseFloat(y)) * dir;
            }
          } else {
            order = x.localeCompare(y) * dir;
          }
          if (order !== 0) { return order; }
          return Number(a.getAttribute("data-index")) - Number(b.getAttribute("data-index"));
        });
        rows.forEach(function (r) { body.appendChild(r); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); sort(); }
      });
    });

    var query = document.getElementById("case-filter");
    var band = document.getElementById("band-filter");
    var flagged = document.getElementById("flagged-filter");
    var shown = document.getElementById("case-count");
    function filter() {
      var q = query.value.trim().toLowerCase();
      var b = band.value;
      var only = flagged ? flagged.checked : false;
      var count = 0;
      Array.prototype.forEach.call(body.rows, function (row) {
        var ok = (!q || row.getAttribute("data-search").indexOf(q) >= 0) &&
                 (!b || row.getAttribute("data-band") === b) &&
                 (!only || row.getAttribute("data-flagged") === "1");
        row.hidden = !ok;
        if (ok) { count += 1; }
      });
      shown.textContent = String(count);
    }
    query.addEventListener("input", filter);
    band.addEventListener("change", filter);
    if (flagged) { flagged.addEventListener("change", filter); }
  }

  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var el = id ? document.getElementById(id) : null;
    while (el) {
      if (el.tagName === "DETAILS") { el.open = true; }
      el = el.parentElement;
    }
  }

  setupTable();
  window.addEventListener("hashchange", openTarget);
  openTarget();
  drawCharts();
}());

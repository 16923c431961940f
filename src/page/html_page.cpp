#include "torchperf/page/html_page.h"

#include <ctime>

#include "torchperf/page/web_assets.h"

namespace torchperf {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// JSON inside <script>: every '<', '>' and '&' as a \u escape (still the same JSON), so that no
// string from a journal can end the element or open an HTML comment; bytes that are not UTF-8
// (a directory name, say) are replaced rather than refused.
std::string script_json(const nlohmann::json& j) {
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

std::string table_of(const TextTable& t) {
  std::string out = "<table><thead><tr>";
  for (const auto& h : t.header) out += "<th>" + escape(h) + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& r : t.rows) {
    out += "<tr>";
    for (const auto& c : r) out += "<td>" + escape(c) + "</td>";
    out += "</tr>";
  }
  return out + "</tbody></table>";
}

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2327;background:#f6f7f9}
header{background:#1d2327;color:#fff;padding:18px 28px}header h1{margin:0 0 4px;font-size:22px}
header p{margin:2px 0;color:#c9d1d9}main{padding:8px 28px 40px;max-width:1500px}
section{background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:14px 18px;margin:16px 0}
h2{font-size:17px;margin:0 0 10px}h3{font-size:15px;margin:14px 0 6px}
.rec{margin:6px 0}.rec b{display:inline-block;min-width:95px;color:#555;font-weight:600}
.kind-winner b,.kind-use b{color:#2e7d32}.kind-avoid b,.kind-guarded b{color:#c62828}
.kind-conditional b,.kind-depends b{color:#ad6800}.evidence{color:#555;margin-left:99px}
.grid{display:flex;flex-wrap:wrap;gap:16px}.panel{background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:10px}
.caption{color:#555;font-size:12px;max-width:460px;margin:4px 0 0}
table{border-collapse:collapse;font-size:13px}td,th{border-bottom:1px solid #e3e6ea;padding:3px 10px;text-align:left}
th{background:#f0f2f5}code,pre{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
pre{background:#f6f8fa;border:1px solid #e3e6ea;padding:10px;overflow:auto}.warn{color:#ad6800}
#torchperf-status{display:none}
)css";

// Renders every panel, then records what was drawn: items per mark type of the data marks (axes
// and legends excluded) and every error, so that a headless browser can check the page.
constexpr const char* kDriver = R"js(
(function () {
  const status = document.getElementById('torchperf-status');
  const marks = {};
  function count(node, acc) {
    if (!node) return;
    if (node.marktype && node.role === 'mark' && node.marktype !== 'group')
      acc[node.marktype] = (acc[node.marktype] || 0) + (node.items || []).length;
    for (const item of node.items || []) for (const child of item.items || []) count(child, acc);
  }
  const jobs = TORCHPERF_PANELS.map(function (p) {
    return vegaEmbed('#' + p.id, p.spec, {renderer: 'svg', actions: false}).then(function (r) {
      const acc = {};
      count(r.view.scenegraph().root, acc);
      marks[p.id] = acc;
    }).catch(function (e) { window.__torchperfErrors.push(p.id + ': ' + e); });
  });
  Promise.all(jobs).then(function () {
    status.textContent = JSON.stringify({done: true, errors: window.__torchperfErrors, marks: marks});
    document.body.setAttribute('data-rendered', 'true');
  });
})();
)js";

}  // namespace

std::string html_escape(const std::string& s) { return escape(s); }
std::string html_table(const TextTable& t) { return table_of(t); }

std::string render_page(const HtmlPage& page) {
  char stamp[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  std::string html = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  html += "<title>" + escape(page.title) + "</title><style>" + kStyle + "</style>";
  // Errors are collected before the libraries load, so that their own failures are counted.
  html += "<script>window.__torchperfErrors=[];window.addEventListener('error',function(e){"
          "window.__torchperfErrors.push(String(e.message));});(function(){var o=console.error;"
          "console.error=function(){window.__torchperfErrors.push(Array.prototype.map.call("
          "arguments,String).join(' '));return o.apply(console,arguments);};})();</script>";
  html += "<script>" + std::string(web::vega_js()) + "</script>";
  html += "<script>" + std::string(web::vega_lite_js()) + "</script>";
  html += "<script>" + std::string(web::vega_embed_js()) + "</script>";
  html += "</head><body><header><h1>" + escape(page.title) + "</h1>";
  for (const auto& line : page.header_lines) html += "<p>" + escape(line) + "</p>";
  html += "<p>written " + std::string(stamp) + "; plots drawn with " +
          escape(std::string(web::versions())) + ", inlined (the page works offline)</p></header><main>";
  html += page.body_before_plots;
  nlohmann::json list = nlohmann::json::array();
  if (!page.panels.empty()) {  // a page of tables only (lint) has no plot section
    html += "<section><h2>Plots</h2><p class=caption>Hover a mark for its configuration and "
            "numbers.</p><div class=grid>";
    for (const auto& p : page.panels) {
      nlohmann::json expected = p.expected_marks;
      html += "<div class=panel><div id=\"" + p.id + "\" data-expected='" + expected.dump() +
              "'></div><p class=caption>" + escape(p.caption) + "</p></div>";
      list.push_back({{"id", p.id}, {"spec", p.spec}});
    }
    html += "</div></section>";
  }
  html += page.body_after_plots;
  html += "<p id=\"torchperf-status\">rendering…</p></main>";
  html += "<script>const TORCHPERF_PANELS=" + script_json(list) + ";" + kDriver + "</script>";
  html += "</body></html>\n";
  return html;
}

}  // namespace torchperf

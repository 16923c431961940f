// The plotting libraries (Vega, Vega-Lite, vega-embed: npm packages pinned in
// src/report/web/package-lock.json) compiled into torchperf at build time, so that the HTML
// report carries them inline and opens without a network.
#pragma once

#include <string_view>

namespace torchperf::web {

std::string_view vega_js();
std::string_view vega_lite_js();
std::string_view vega_embed_js();
// "vega 6.4.0, vega-lite 6.5.0, vega-embed 7.3.0": what the page was built with.
std::string_view versions();

}  // namespace torchperf::web

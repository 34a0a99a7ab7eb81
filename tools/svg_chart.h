// tools/svg_chart.h — a small line chart written as SVG text (no plotting library needed).
//
//   SvgChart chart{.title = "Generated tokens/s", .x_label = "offered load (requests/s)", .y_label =
//   "tok/s"}; chart.series.push_back({"static", "#d62728", {{1, 120}, {2, 180}}}); std::string svg =
//   svg_document({chart, latency_chart}, "caption");   // charts side by side
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace graphrun::tools {

struct SvgSeries {
    std::string name;
    std::string color;                              // "#1f77b4"
    std::vector<std::pair<double, double>> points;  // (x, y), drawn in order with a marker at each
};

struct SvgChart {
    std::string title, x_label, y_label;
    std::vector<SvgSeries> series;
};

// The charts in a row, each 420 x 300 with axes from 0 to a rounded maximum, ticks, a legend, and a
// caption line under them. Text is escaped.
std::string svg_document(const std::vector<SvgChart>& charts, const std::string& caption);

}  // namespace graphrun::tools

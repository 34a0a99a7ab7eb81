// tools/svg_chart.cpp — line charts as SVG: axes, "nice" ticks, polylines with markers, a legend.
#include "tools/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace graphrun::tools {

namespace {

constexpr double kWidth = 420, kHeight = 300;
constexpr double kLeft = 62, kRight = 16, kTop = 34, kBottom = 46;  // plot margins inside a chart

std::string escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

std::string tick_label(double v) {
    char buf[32];
    if (v != 0 && std::abs(v) < 10 && v != std::floor(v))
        std::snprintf(buf, sizeof buf, "%.2g", v);
    else
        std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
}

// A tick step of 1, 2 or 5 times a power of ten giving about 5 ticks up to max.
double nice_step(double max) {
    if (max <= 0) return 1;
    const double raw = max / 5, power = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (raw <= m * power) return m * power;
    return 10 * power;
}

std::string chart_svg(const SvgChart& c, double x0) {
    double x_max = 0, y_max = 0;
    for (const SvgSeries& s : c.series)
        for (const auto& [x, y] : s.points) {
            x_max = std::max(x_max, x);
            y_max = std::max(y_max, y);
        }
    const double x_step = nice_step(x_max), y_step = nice_step(y_max);
    x_max = std::max(x_step, std::ceil(x_max / x_step) * x_step);
    y_max = std::max(y_step, std::ceil(y_max / y_step) * y_step);
    const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
    auto px = [&](double x) { return x0 + kLeft + x / x_max * pw; };
    auto py = [&](double y) { return kTop + ph - y / y_max * ph; };

    std::string out;
    out += "<text x=\"" + num(x0 + kWidth / 2) + "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">" +
           escape(c.title) + "</text>\n";
    // Grid and ticks.
    for (double y = 0; y <= y_max + y_step / 2; y += y_step) {
        out += "<line x1=\"" + num(px(0)) + "\" y1=\"" + num(py(y)) + "\" x2=\"" + num(px(x_max)) +
               "\" y2=\"" + num(py(y)) + "\" stroke=\"#e0e0e0\"/>\n";
        out += "<text x=\"" + num(px(0) - 6) + "\" y=\"" + num(py(y) + 4) +
               "\" text-anchor=\"end\" font-size=\"11\">" + tick_label(y) + "</text>\n";
    }
    for (double x = 0; x <= x_max + x_step / 2; x += x_step)
        out += "<text x=\"" + num(px(x)) + "\" y=\"" + num(py(0) + 16) +
               "\" text-anchor=\"middle\" font-size=\"11\">" + tick_label(x) + "</text>\n";
    out += "<line x1=\"" + num(px(0)) + "\" y1=\"" + num(py(0)) + "\" x2=\"" + num(px(x_max)) + "\" y2=\"" +
           num(py(0)) + "\" stroke=\"black\"/>\n";
    out += "<line x1=\"" + num(px(0)) + "\" y1=\"" + num(py(0)) + "\" x2=\"" + num(px(0)) + "\" y2=\"" +
           num(py(y_max)) + "\" stroke=\"black\"/>\n";
    out += "<text x=\"" + num(x0 + kLeft + pw / 2) + "\" y=\"" + num(kHeight - 10) +
           "\" text-anchor=\"middle\" font-size=\"12\">" + escape(c.x_label) + "</text>\n";
    out += "<text transform=\"translate(" + num(x0 + 14) + "," + num(kTop + ph / 2) +
           ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" + escape(c.y_label) + "</text>\n";
    // Series and legend.
    for (size_t i = 0; i < c.series.size(); ++i) {
        const SvgSeries& s = c.series[i];
        std::string points;
        for (const auto& [x, y] : s.points) points += num(px(x)) + "," + num(py(y)) + " ";
        out += "<polyline fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"2\" points=\"" + points +
               "\"/>\n";
        for (const auto& [x, y] : s.points)
            out += "<circle cx=\"" + num(px(x)) + "\" cy=\"" + num(py(y)) + "\" r=\"3\" fill=\"" + s.color +
                   "\"/>\n";
        const double ly = kTop + 8 + 16 * double(i);
        out += "<line x1=\"" + num(x0 + kLeft + 10) + "\" y1=\"" + num(ly) + "\" x2=\"" +
               num(x0 + kLeft + 30) + "\" y2=\"" + num(ly) + "\" stroke=\"" + s.color +
               "\" stroke-width=\"2\"/>\n";
        out += "<text x=\"" + num(x0 + kLeft + 36) + "\" y=\"" + num(ly + 4) + "\" font-size=\"11\">" +
               escape(s.name) + "</text>\n";
    }
    return out;
}

}  // namespace

std::string svg_document(const std::vector<SvgChart>& charts, const std::string& caption) {
    const double width = kWidth * double(std::max<size_t>(1, charts.size())), height = kHeight + 24;
    std::string out =
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" + num(height) +
        "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
        "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    for (size_t i = 0; i < charts.size(); ++i) out += chart_svg(charts[i], kWidth * double(i));
    out += "<text x=\"" + num(width / 2) + "\" y=\"" + num(height - 8) +
           "\" text-anchor=\"middle\" font-size=\"11\" fill=\"#555\">" + escape(caption) +
           "</text>\n</svg>\n";
    return out;
}

}  // namespace graphrun::tools

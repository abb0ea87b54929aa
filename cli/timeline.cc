// Timeline plot. The curve is the allocator replay's (blocks as handed out, an
// unsplit reused block counted whole), so its top is exactly the reported peak.
#include "cli/timeline.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "cli/report.h"
#include "cli/units.h"
#include "estimator/error.h"

namespace memest {
namespace {

// Tableau 10, in category order (parameters at the bottom of the stack).
const char* const kCategoryColor[kCategoryCount] = {"#4e79a7", "#a0cbe8", "#f28e2b", "#e15759", "#76b7b2",
                                                    "#59a14f", "#edc948", "#b07aa1", "#9c755f"};

struct PhaseStyle {
  const char* fill;   // the plot's background in the phase
  const char* strip;  // the labelled strip above the plot
  const char* short_name;
};

PhaseStyle phase_style(Phase p) {
  switch (p) {
    case Phase::Forward: return {"#eef3fa", "#c9daf0", "F"};
    case Phase::Backward: return {"#fbf0e6", "#f3d3b5", "B"};
    case Phase::Optimizer: return {"#ecf6ec", "#c4e3c4", "O"};
    case Phase::ZeroGrad: return {"#f4f4f4", "#dddddd", "Z"};
    case Phase::Setup: break;
  }
  return {"#f8f8f8", "#e6e6e6", "S"};
}

std::string xml_escape(const std::string& s) {
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

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

// One path command with its coordinate, "H12.5".
void path_to(std::string& d, char command, double v) {
  d += command;
  d += num(v);
}

// A round tick step near span/ticks: 1, 2, 2.5 or 5 times a power of ten.
double nice_step(double span, int ticks) {
  const double raw = span / ticks;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

std::string tick_label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), v == std::floor(v) ? "%.0f" : "%.1f", v);
  return buf;
}

}  // namespace

Timeline build_timeline(const Program& p, const std::vector<int64_t>& sizes, size_t max_points) {
  Timeline t;
  t.events = p.events.size();
  const size_t bucket = std::max<size_t>(1, (t.events + max_points - 1) / std::max<size_t>(1, max_points));
  std::vector<char> live(p.blocks.size(), 0);
  Timeline::Point now, best;
  bool have = false;
  for (size_t e = 0; e < p.events.size(); ++e) {
    const Event& ev = p.events[e];
    if (t.bands.empty() || t.bands.back().iter != ev.iter || t.bands.back().phase != ev.phase) {
      if (!t.bands.empty()) t.bands.back().end = e;
      t.bands.push_back({e, e, ev.iter, ev.phase});
    }
    const size_t b = static_cast<size_t>(ev.block);
    const int64_t size = b < sizes.size() ? sizes[b] : 0;
    const size_t c = static_cast<size_t>(p.blocks[b].category);
    // As the replay does: zero-byte requests allocate nothing, frees of them free nothing.
    if (ev.kind == Event::Alloc && size > 0 && !live[b]) {
      live[b] = 1;
      now.total += size;
      now.bytes[c] += size;
    } else if (ev.kind == Event::Free && live[b]) {
      live[b] = 0;
      now.total -= size;
      now.bytes[c] -= size;
    }
    now.event = e;
    if (!have || now.total > best.total) best = now;
    have = true;
    if ((e + 1) % bucket == 0 || e + 1 == p.events.size()) {
      t.points.push_back(best);
      have = false;
    }
  }
  if (!t.bands.empty()) t.bands.back().end = t.events;
  return t;
}

namespace {

// The plot area and its scales: events along x, bytes in a unit that suits the peak
// along y, with room above the peak for its label.
struct Plot {
  static constexpr double W = 1400, H = 760;
  static constexpr double L = 90, R = 1130, T = 96, B = 680;  // the plot area
  double xmax = 1, unit = 1024.0, ystep = 1, ymax = 1;
  const char* unit_name = "KiB";

  Plot(const Estimate& e, const Timeline& t) : xmax(static_cast<double>(std::max<size_t>(t.events, 1))) {
    int64_t top = std::max<int64_t>(e.peak.peak_bytes, 1);
    for (const auto& p : t.points) top = std::max(top, p.total);
    unit = top >= (1ll << 30) ? 1073741824.0 : top >= (1ll << 20) ? 1048576.0 : 1024.0;
    unit_name = unit > 1048576.0 ? "GiB" : unit > 1024.0 ? "MiB" : "KiB";
    ystep = nice_step(static_cast<double>(top) / unit * 1.15, 6);
    ymax = std::ceil(static_cast<double>(top) / unit * 1.15 / ystep) * ystep;
  }
  double X(double event) const { return L + (R - L) * event / xmax; }
  double Y(double bytes) const { return B - (B - T) * (bytes / unit) / ymax; }
};

// Phase bands: a tinted background in the plot and a labelled strip above it.
std::string svg_phases(const Plot& P, const Timeline& t) {
  constexpr double T = Plot::T, B = Plot::B;
  std::string s = "<g id=\"phases\">\n";
  for (const auto& band : t.bands) {
    const PhaseStyle st = phase_style(band.phase);
    const double x0 = P.X(static_cast<double>(band.first)), x1 = P.X(static_cast<double>(band.end));
    const std::string name = std::string(phase_name(band.phase)) + " " + std::to_string(band.iter + 1);
    s += "<rect x=\"" + num(x0) + "\" y=\"" + num(T) + "\" width=\"" + num(x1 - x0) + "\" height=\"" + num(B - T) +
         "\" fill=\"" + st.fill + "\"/>\n";
    s += "<rect x=\"" + num(x0) + "\" y=\"" + num(T - 22) + "\" width=\"" + num(x1 - x0) +
         "\" height=\"20\" fill=\"" + st.strip + "\"><title>" + name + ": events " + std::to_string(band.first) +
         " to " + std::to_string(band.end) + "</title></rect>\n";
    // The full name where it fits (about 7 px a character), else its initial.
    std::string label = (x1 - x0) >= 7.0 * static_cast<double>(name.size()) + 8 ? name
                        : (x1 - x0) >= 22 ? std::string(st.short_name) + std::to_string(band.iter + 1)
                                          : "";
    if (!label.empty()) {
      s += "<text x=\"" + num((x0 + x1) / 2) + "\" y=\"" + num(T - 8) + "\" text-anchor=\"middle\">" + label +
           "</text>\n";
    }
  }
  return s + "</g>\n";
}

// Grid, ticks and the axes' titles.
std::string svg_axes(const Plot& P, const Timeline& t) {
  constexpr double L = Plot::L, R = Plot::R, T = Plot::T, B = Plot::B;
  std::string s = "<g id=\"axes\" stroke=\"#d0d0d0\" stroke-width=\"1\">\n";
  for (double v = 0; v <= P.ymax + 1e-9; v += P.ystep) {
    s += "<line x1=\"" + num(L) + "\" x2=\"" + num(R) + "\" y1=\"" + num(P.Y(v * P.unit)) + "\" y2=\"" +
         num(P.Y(v * P.unit)) + "\"/>\n";
    s += "<text x=\"" + num(L - 8) + "\" y=\"" + num(P.Y(v * P.unit) + 4) +
         "\" text-anchor=\"end\" stroke=\"none\" fill=\"#333\">" + tick_label(v) + "</text>\n";
  }
  const double xstep = std::max(1.0, std::round(nice_step(P.xmax, 8)));
  for (double v = 0; v <= P.xmax + 1e-9; v += xstep) {
    s += "<line x1=\"" + num(P.X(v)) + "\" x2=\"" + num(P.X(v)) + "\" y1=\"" + num(B) + "\" y2=\"" + num(B + 5) + "\"/>\n";
    s += "<text x=\"" + num(P.X(v)) + "\" y=\"" + num(B + 19) + "\" text-anchor=\"middle\" stroke=\"none\" fill=\"#333\">" +
         thousands(static_cast<int64_t>(v)) + "</text>\n";
  }
  s += "</g>\n";
  s += "<text x=\"" + num((L + R) / 2) + "\" y=\"" + num(B + 44) +
       "\" text-anchor=\"middle\" fill=\"#333\">simulated event (allocations and frees, in order)" +
       (t.points.size() < t.events ? ": each step is the highest of " +
                                         thousands(static_cast<int64_t>((t.events + t.points.size() - 1) / t.points.size())) +
                                         " events"
                                   : std::string()) +
       "</text>\n";
  s += "<text transform=\"translate(24 " + num((T + B) / 2) + ") rotate(-90)\" text-anchor=\"middle\" fill=\"#333\">" +
       "allocated (" + P.unit_name + ")</text>\n";
  return s;
}

// Stacked step areas (a point's bytes hold until the next point's event), the total's
// outline and the plot's frame. `used`: the categories with bytes at some point.
std::string svg_areas(const Plot& P, const Timeline& t, const std::array<bool, kCategoryCount>& used) {
  constexpr double L = Plot::L, R = Plot::R, T = Plot::T, B = Plot::B;
  std::vector<double> x0(t.points.size()), x1(t.points.size());
  for (size_t i = 0; i < t.points.size(); ++i) {
    x0[i] = P.X(static_cast<double>(t.points[i].event));
    x1[i] = i + 1 < t.points.size() ? P.X(static_cast<double>(t.points[i + 1].event)) : P.X(P.xmax);
  }
  std::vector<int64_t> below(t.points.size(), 0);
  std::string s = "<g id=\"areas\" stroke=\"none\">\n";
  for (size_t c = 0; c < kCategoryCount && !t.points.empty(); ++c) {
    if (!used[c]) continue;
    std::string d = "M" + num(x0[0]) + " " + num(P.Y(static_cast<double>(below[0] + t.points[0].bytes[c])));
    for (size_t i = 0; i < t.points.size(); ++i) {
      if (i) path_to(d, 'V', P.Y(static_cast<double>(below[i] + t.points[i].bytes[c])));
      path_to(d, 'H', x1[i]);
    }
    for (size_t i = t.points.size(); i-- > 0;) {
      path_to(d, 'V', P.Y(static_cast<double>(below[i])));
      path_to(d, 'H', x0[i]);
    }
    s += "<path fill=\"" + std::string(kCategoryColor[c]) + "\" d=\"" + d + "Z\"><title>" +
         category_title(static_cast<Category>(c)) + "</title></path>\n";
    for (size_t i = 0; i < t.points.size(); ++i) below[i] += t.points[i].bytes[c];
  }
  s += "</g>\n";
  if (!t.points.empty()) {
    std::string d = "M" + num(x0[0]) + " " + num(P.Y(static_cast<double>(t.points[0].total)));
    for (size_t i = 0; i < t.points.size(); ++i) {
      if (i) path_to(d, 'V', P.Y(static_cast<double>(t.points[i].total)));
      path_to(d, 'H', x1[i]);
    }
    s += "<path id=\"total\" fill=\"none\" stroke=\"#222\" stroke-width=\"1\" d=\"" + d + "\"/>\n";
  }
  s += "<rect x=\"" + num(L) + "\" y=\"" + num(T) + "\" width=\"" + num(R - L) + "\" height=\"" + num(B - T) +
       "\" fill=\"none\" stroke=\"#888\"/>\n";
  return s;
}

// The peak: where the replay put it, with the node being processed then.
std::string svg_peak(const Plot& P, const Analysis& a, const Estimate& e) {
  constexpr double L = Plot::L, R = Plot::R, T = Plot::T, B = Plot::B;
  const double px = P.X(static_cast<double>(e.peak.event)), py = P.Y(static_cast<double>(e.peak.peak_bytes));
  const std::string where = node_label(a, e.peak.node);
  const std::string line1 = "Peak " + format_bytes(e.peak.peak_bytes) + " (" + thousands(e.peak.peak_bytes) + " B)";
  // No node: the optimizer step, zero_grad or setup, which the phase names.
  const std::string line2 = (where.empty() ? std::string() : where + ", ") + phase_name(e.peak.phase) +
                            " of iteration " + std::to_string(e.peak.iter + 1) + ", event " +
                            thousands(static_cast<int64_t>(e.peak.event));
  const bool left = px > L + 0.6 * (R - L);
  const double tw = 7.0 * static_cast<double>(std::max(line1.size(), line2.size()));
  const double tx = left ? px - 10 : px + 10, ty = std::max(T + 18, py - 40);
  std::string s = "<g id=\"peak\">\n";
  s += "<line x1=\"" + num(L) + "\" x2=\"" + num(R) + "\" y1=\"" + num(py) + "\" y2=\"" + num(py) +
       "\" stroke=\"#c00\" stroke-width=\"1\" stroke-dasharray=\"2 4\"/>\n";
  s += "<line x1=\"" + num(px) + "\" x2=\"" + num(px) + "\" y1=\"" + num(T) + "\" y2=\"" + num(B) +
       "\" stroke=\"#c00\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n";
  s += "<circle cx=\"" + num(px) + "\" cy=\"" + num(py) + "\" r=\"4\" fill=\"#c00\"/>\n";
  s += "<rect x=\"" + num(left ? tx - tw - 6 : tx - 6) + "\" y=\"" + num(ty - 15) + "\" width=\"" + num(tw + 12) +
       "\" height=\"40\" fill=\"white\" fill-opacity=\"0.9\" stroke=\"#c00\"/>\n";
  s += "<text x=\"" + num(tx) + "\" y=\"" + num(ty) + "\" text-anchor=\"" + (left ? "end" : "start") +
       "\" fill=\"#c00\" font-weight=\"bold\">" + xml_escape(line1) + "</text>\n";
  s += "<text x=\"" + num(tx) + "\" y=\"" + num(ty + 17) + "\" text-anchor=\"" + (left ? "end" : "start") +
       "\" fill=\"#222\">" + xml_escape(line2) + "</text>\n";
  return s + "</g>\n";
}

// Legend, top of the stack first, with each category's bytes at the peak.
std::string svg_legend(const Estimate& e, const std::array<bool, kCategoryCount>& used) {
  constexpr double W = Plot::W, R = Plot::R, T = Plot::T;
  std::string s = "<g id=\"legend\">\n";
  double ly = T + 10;
  s += "<text x=\"" + num(R + 24) + "\" y=\"" + num(ly) + "\" font-weight=\"bold\">At the peak</text>\n";
  for (size_t c = kCategoryCount; c-- > 0;) {
    if (!used[c] && e.peak.components[c] == 0) continue;
    ly += 22;
    s += "<rect x=\"" + num(R + 24) + "\" y=\"" + num(ly - 11) + "\" width=\"14\" height=\"14\" fill=\"" +
         kCategoryColor[c] + "\"/>\n";
    s += "<text x=\"" + num(R + 46) + "\" y=\"" + num(ly) + "\">" + category_title(static_cast<Category>(c)) +
         "</text>\n";
    s += "<text x=\"" + num(W - 16) + "\" y=\"" + num(ly) + "\" text-anchor=\"end\">" +
         format_bytes(e.peak.components[c]) + "</text>\n";
  }
  ly += 26;
  s += "<text x=\"" + num(R + 24) + "\" y=\"" + num(ly) + "\" font-weight=\"bold\">Allocated</text>\n";
  s += "<text x=\"" + num(W - 16) + "\" y=\"" + num(ly) + "\" text-anchor=\"end\" font-weight=\"bold\">" +
       format_bytes(e.peak.peak_bytes) + "</text>\n";
  ly += 20;
  s += "<text x=\"" + num(R + 24) + "\" y=\"" + num(ly) + "\" fill=\"#444\">Reserved (model)</text>\n";
  s += "<text x=\"" + num(W - 16) + "\" y=\"" + num(ly) + "\" text-anchor=\"end\" fill=\"#444\">" +
       format_bytes(e.reserved_bytes) + "</text>\n";
  return s + "</g>\n";
}

}  // namespace

std::string timeline_svg(const Analysis& a, const Estimate& e, const Timeline& t) {
  constexpr double W = Plot::W, H = Plot::H, L = Plot::L;
  const Plot P(e, t);
  std::array<bool, kCategoryCount> used{};
  for (const auto& p : t.points) {
    for (size_t c = 0; c < kCategoryCount; ++c) used[c] = used[c] || p.bytes[c] > 0;
  }
  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W) + "\" height=\"" + num(H) + "\" viewBox=\"0 0 " +
       num(W) + " " + num(H) + "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  s += "<title>memest timeline: " + xml_escape(config_line(a, e.batch)) + "</title>\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + num(L) + "\" y=\"28\" font-size=\"18\" font-weight=\"bold\">Allocated GPU memory over " +
       std::to_string(a.train.iterations) + " simulated training iterations</text>\n";
  s += "<text x=\"" + num(L) + "\" y=\"50\" fill=\"#444\">" + xml_escape(config_line(a, e.batch)) + "</text>\n";
  s += svg_phases(P, t) + svg_axes(P, t) + svg_areas(P, t, used) + svg_peak(P, a, e) + svg_legend(e, used);
  return s + "</svg>\n";
}

TimelineFormat timeline_format(const std::string& path) {
  const size_t dot = path.rfind('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot);
  for (auto& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (ext == ".svg") return TimelineFormat::Svg;
  if (ext == ".html" || ext == ".htm") return TimelineFormat::Html;
  throw Error("timeline file '" + path + "' must end in .svg or .html");
}

void write_timeline(const std::string& path, const Analysis& a, const Estimate& e) {
  const TimelineFormat format = timeline_format(path);
  const std::string svg = timeline_svg(a, e, build_timeline(a.program, allocated_sizes(a, e)));
  std::ofstream f(path, std::ios::binary);
  if (format == TimelineFormat::Html) {
    f << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>memest timeline: "
      << xml_escape(a.graph.file) << "</title></head>\n<body style=\"margin:0\">\n"
      << svg << "</body></html>\n";
  } else {
    f << svg;
  }
  f.close();
  if (!f) throw Error("cannot write the timeline file '" + path + "'");
}

}  // namespace memest

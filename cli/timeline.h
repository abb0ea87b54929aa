// The memory timeline: allocated bytes over the simulated training step, stacked
// by category, with the phases and the peak marked, as a hand-written SVG.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "estimator/analysis.h"

namespace memest {

/// The series a timeline plots, downsampled from the program's events.
struct Timeline {
  /// Allocated bytes right after one event, by category.
  struct Point {
    size_t event = 0;
    int64_t total = 0;
    std::array<int64_t, kCategoryCount> bytes{};
  };
  /// A run of events in one phase of one iteration: [first, end).
  struct Band {
    size_t first = 0, end = 0;
    int iter = 0;
    Phase phase = Phase::Setup;
  };
  std::vector<Point> points;  ///< each the highest point of its bucket, so the peak is always kept
  std::vector<Band> bands;
  size_t events = 0;          ///< events in the program (the x range)
};

/// Replays the events with the allocator's block sizes (`sizes`, see
/// allocated_sizes) into at most `max_points` points: events fall into equal
/// buckets and each bucket keeps its first highest point.
Timeline build_timeline(const Program& p, const std::vector<int64_t>& sizes, size_t max_points = 2000);

/// The timeline as a standalone SVG document.
std::string timeline_svg(const Analysis& a, const Estimate& e, const Timeline& t);

enum class TimelineFormat { Svg, Html };
/// The format a path asks for by its extension: .svg, or .html / .htm for the SVG
/// inline in a page (any case). Throws Error for any other.
TimelineFormat timeline_format(const std::string& path);

/// Writes the timeline of this estimate to `path`: an SVG, or for a .html path the
/// SVG inline in a page. Throws Error when the path has another extension or
/// cannot be written.
void write_timeline(const std::string& path, const Analysis& a, const Estimate& e);

}  // namespace memest

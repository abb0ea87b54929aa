// Byte sizes for people: parsing "24GiB" / "24GB" and printing "12.34 GiB".
#pragma once

#include <cstdint>
#include <string>

namespace memest {

/// A bare number (no unit) below this is refused by parse_size(): surely a forgotten unit.
constexpr double kMinBareBytes = 1048576;

/// Parses bytes or a size with a unit: 24GiB, 24GB (10^9), 512MiB, 1.5GiB, 24B, 1000000.
/// A bare number is bytes, but below kMinBareBytes it is an error that shows the units.
/// Throws Error.
int64_t parse_size(const std::string& text);
/// "12.34 GiB", "98.0 MiB", "4.0 KiB", "512 B".
std::string format_bytes(int64_t bytes);
/// 25557032 -> "25,557,032".
std::string thousands(int64_t n);

}  // namespace memest

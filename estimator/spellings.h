// The one table of spellings for each training-configuration enum: the command line
// parses with it, the reports and JSON print with it.
#pragma once

#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "estimator/simulate.h"

namespace memest {

template <class E>
struct Spelling {
  E value;
  const char* name;
};

inline constexpr Spelling<Optim> kOptimSpellings[] = {{Optim::SGD, "sgd"}, {Optim::Adam, "adam"}, {Optim::AdamW, "adamw"}};
inline constexpr Spelling<Amp> kAmpSpellings[] = {{Amp::None, "none"}, {Amp::FP16, "fp16"}, {Amp::BF16, "bf16"}};
inline constexpr Spelling<Loss> kLossSpellings[] = {{Loss::CE, "ce"}, {Loss::MSE, "mse"}, {Loss::Sum, "sum"}};
inline constexpr Spelling<Attention> kAttentionSpellings[] = {{Attention::Fused, "fused"}, {Attention::Eager, "eager"}};
inline constexpr Spelling<Checkpoint> kCheckpointSpellings[] = {
    {Checkpoint::None, "none"}, {Checkpoint::Blocks, "blocks"}, {Checkpoint::Sqrt, "sqrt"}};

template <class E, size_t N>
const char* spelling(const Spelling<E> (&table)[N], E value) {
  for (const auto& s : table) {
    if (s.value == value) return s.name;
  }
  return "?";
}

template <class E, size_t N>
std::optional<E> parse_spelling(const Spelling<E> (&table)[N], std::string_view name) {
  for (const auto& s : table) {
    if (name == s.name) return s.value;
  }
  return std::nullopt;
}

/// "sgd, adam or adamw": the table's names, from `first` on, for messages and --help.
template <class E, size_t N>
std::string spellings_list(const Spelling<E> (&table)[N], size_t first = 0) {
  std::string out;
  for (size_t i = first; i < N; ++i) out += (i == first ? "" : i + 1 == N ? " or " : ", ") + std::string(table[i].name);
  return out;
}

inline const char* optim_name(Optim v) { return spelling(kOptimSpellings, v); }
inline const char* amp_name(Amp v) { return spelling(kAmpSpellings, v); }
inline const char* loss_name(Loss v) { return spelling(kLossSpellings, v); }
inline const char* attention_name(Attention v) { return spelling(kAttentionSpellings, v); }
inline const char* checkpoint_name(Checkpoint v) { return spelling(kCheckpointSpellings, v); }

}  // namespace memest

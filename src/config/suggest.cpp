// "Did you mean ...?" for unknown keys: the closest known key by edit
// distance, offered only when it is close enough to be a typo.
#include <algorithm>
#include <string>
#include <vector>

#include "peregrine/config/options.h"

namespace peregrine::config {

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string_view after_dot(std::string_view s) {
  size_t dot = s.rfind('.');
  return dot == std::string_view::npos ? s : s.substr(dot + 1);
}

// A typo changes a few characters; a third of the word is the most we accept.
bool plausible(size_t distance, std::string_view word) { return distance <= std::max<size_t>(2, word.size() / 3); }

}  // namespace

std::string suggest_among(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string_view best;
  size_t best_distance = SIZE_MAX;
  for (std::string_view c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_distance) best_distance = d, best = c;
  }
  return plausible(best_distance, word) ? std::string(best) : std::string();
}

std::string suggest_key(std::string_view key) {
  std::string_view best;
  size_t best_distance = SIZE_MAX;
  for (const Option& o : options()) {
    // Compare whole keys ("engnie.scheduler") and the names alone, so a key
    // in the wrong table or a shortened name ("high_watermark") still finds
    // its option; a prefix match ("high_watermark" of "..._per_drive") counts
    // as close.
    size_t d = std::min(edit_distance(key, o.key), edit_distance(after_dot(key), o.name()));
    if (o.name().starts_with(after_dot(key)) && after_dot(key).size() >= 4) d = std::min<size_t>(d, 1);
    if (d < best_distance) best_distance = d, best = o.key;
  }
  return plausible(best_distance, after_dot(key)) ? std::string(best) : std::string();
}

}  // namespace peregrine::config

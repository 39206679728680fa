// Internal to the SNAP text parser: parses one piece of an edge list that
// starts at a line start and ends after a '\n' (or at the end of the file).
// Pieces are parsed by several threads at once; each reports its line count
// so the caller can number the first bad line of the whole file exactly.
// Thread rules: a TextChunk is owned by the thread parsing it until that
// thread is joined.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "peregrine/graph/edge_input.h"

namespace peregrine::graph::detail {

struct TextChunk {
  std::vector<InputEdge> edges;
  std::vector<uint32_t> weights;  // weighted: edges[i]'s weight
  uint64_t lines = 0;             // lines parsed; with an error, the bad line is the last of them
  bool failed = false;
  std::string error;  // what is wrong with the bad line (no FILE:LINE prefix)
};

// Lines longer than this are refused ("not an edge list?").
inline constexpr size_t kMaxTextLine = 1 << 20;

// Clears *out and parses `text` into it: one edge per line, blank and
// comment ('#', '%') lines skipped, the third column the weight if
// `weighted`, further columns ignored. Stops at the first bad line.
void parse_text_chunk(std::string_view text, bool weighted, TextChunk* out);

}  // namespace peregrine::graph::detail

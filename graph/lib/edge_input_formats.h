// Internal to edge_input.cpp: the constructors of the four kinds of
// EdgeInput. Each takes ownership of fd.
// Thread rules: owned by one thread.
#pragma once

#include <filesystem>
#include <memory>

#include "peregrine/graph/edge_input.h"

namespace peregrine::graph::detail {

// `size`: the file's bytes, 0 for a stream of unknown length (a pipe);
// `prefix`: bytes already read from a stream, to be read first.
// `threads`: how many pieces of text are parsed at once (>= 1).
Expected<std::unique_ptr<EdgeInput>> open_text_input(int fd, const std::filesystem::path& path, uint64_t size,
                                                     std::string_view prefix, unsigned threads, bool weighted);
Expected<std::unique_ptr<EdgeInput>> open_matrix_market_input(int fd, const std::filesystem::path& path, uint64_t size,
                                                              std::string_view prefix, bool weighted);
Expected<std::unique_ptr<EdgeInput>> open_dimacs_input(int fd, const std::filesystem::path& path, uint64_t size,
                                                       std::string_view prefix);
Expected<std::unique_ptr<EdgeInput>> open_binary_input(int fd, const std::filesystem::path& path, uint64_t size,
                                                       unsigned id_bytes, std::string_view prefix);

}  // namespace peregrine::graph::detail

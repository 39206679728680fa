// Internal to edge_input.cpp: the constructors of the three kinds of
// EdgeInput. Each takes ownership of fd. Owned by one thread.
#pragma once

#include <filesystem>
#include <memory>

#include "peregrine/graph/edge_input.h"

namespace peregrine::graph::detail {

Expected<std::unique_ptr<EdgeInput>> open_text_input(int fd, const std::filesystem::path& path, uint64_t size);
Expected<std::unique_ptr<EdgeInput>> open_matrix_market_input(int fd, const std::filesystem::path& path,
                                                              uint64_t size);
Expected<std::unique_ptr<EdgeInput>> open_binary_input(int fd, const std::filesystem::path& path, uint64_t size,
                                                       unsigned id_bytes);

}  // namespace peregrine::graph::detail

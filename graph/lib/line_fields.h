// Internal to the line-by-line parsers (Matrix Market, DIMACS): the
// fields of one line as numbers, with errors that name FILE:LINE.
// Thread rules: a Fields is a view used by one thread.
#pragma once

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "peregrine/graph/edge_input.h"
#include "peregrine/graph/line_reader.h"
#include "peregrine/util/result.h"
#include "text_fields.h"

namespace peregrine::graph::detail {

// A line's fields, with errors that name FILE:LINE.
class Fields {
 public:
  Fields(std::string_view line, const LineReader& lines)
      : p_(line.data()), e_(line.data() + line.size()), lines_(lines) {}

  // True if nothing but blanks is left.
  bool at_end() {
    p_ = skip_blanks(p_, e_);
    return p_ == e_;
  }
  char peek() { return at_end() ? '\0' : *p_; }

  // The next blank-delimited field as it is ("" at the end of the line).
  std::string_view word() {
    at_end();
    const char* start = p_;
    while (p_ < e_ && !blank(*p_)) ++p_;
    return {start, static_cast<size_t>(p_ - start)};
  }

  // The next field as an unsigned 64-bit number; `what` names it in errors.
  Status number(uint64_t* out, const char* what) {
    at_end();
    std::string why;
    if (!parse_id(&p_, e_, out, what, &why)) return error(why);
    return Status::ok();
  }

  // The next field as an edge weight.
  Status weight(uint32_t* out) {
    at_end();
    std::string why;
    if (!parse_weight(&p_, e_, out, &why)) return error(why);
    return Status::ok();
  }

  Status error(const std::string& what) const {
    return Status::error(EINVAL, lines_.path().string() + ":" + std::to_string(lines_.line_number()) + ": " + what);
  }

 private:
  const char* p_;
  const char* e_;
  const LineReader& lines_;
};

// The entries of a file that declares its vertices (1..n) and how many
// entries follow (Matrix Market's size line, DIMACS's problem line): each
// is parsed, its ids checked against 1..n, and counted against the
// declaration. The names fill the messages: "index 9 out of range 1..5",
// "more arcs than the 4 the problem line declares".
class DeclaredEntries {
 public:
  struct Names {
    const char* id;        // "index", "vertex"
    const char* entries;   // "entries", "arcs"
    const char* declarer;  // "size line", "problem line"
    const char* source;    // the first id's name: "row index", "arc tail"
    const char* target;    // "column index", "arc head"
  };
  explicit DeclaredEntries(Names names) : names_(names) {}

  void declare(uint64_t vertices, uint64_t entries) {
    vertices_ = vertices;
    declared_ = entries;
  }
  // The next entry of line `f` into *e (and its weight into *weight, unless null).
  Status parse(Fields& f, InputEdge* e, uint32_t* weight) {
    Status st = f.number(&e->u, names_.source);
    if (st) st = f.number(&e->v, names_.target);
    if (st && weight != nullptr) st = f.weight(weight);
    if (!st) return st;
    for (uint64_t x : {e->u, e->v})
      if (x < 1 || x > vertices_)
        return f.error(std::string(names_.id) + " " + std::to_string(x) + " out of range 1.." +
                       std::to_string(vertices_));
    if (++seen_ > declared_)
      return f.error(std::string("more ") + names_.entries + " than the " + std::to_string(declared_) + " the " +
                     names_.declarer + " declares");
    return Status::ok();
  }
  // At the end of the file (`f` its last line): every declared entry came.
  Status finish(const Fields& f) const {
    if (seen_ == declared_) return Status::ok();
    return f.error("end of file after " + std::to_string(seen_) + " " + names_.entries + "; the " + names_.declarer +
                   " declares " + std::to_string(declared_));
  }
  uint64_t vertices() const { return vertices_; }

 private:
  Names names_;
  uint64_t vertices_ = 0;
  uint64_t declared_ = 0;
  uint64_t seen_ = 0;
};

// Makes a line-by-line parser and reads its header (start()), as the
// EdgeInput open() returns.
template <class Parser, class... Args>
Expected<std::unique_ptr<EdgeInput>> open_started(Args&&... args) {
  auto in = std::make_unique<Parser>(std::forward<Args>(args)...);
  Status st = in->start();
  if (!st) return st;
  return std::unique_ptr<EdgeInput>(std::move(in));
}

}  // namespace peregrine::graph::detail

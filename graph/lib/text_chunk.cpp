#include "text_chunk.h"

#include <cstring>

#include "text_fields.h"

namespace peregrine::graph::detail {

void parse_text_chunk(std::string_view text, bool weighted, TextChunk* out) {
  out->edges.clear();
  out->weights.clear();
  out->lines = 0;
  out->failed = false;
  out->error.clear();
  const char* p = text.data();
  const char* const end = text.data() + text.size();
  while (p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    const char* e = nl != nullptr ? nl : end;
    ++out->lines;
    if (static_cast<size_t>(e - p) > kMaxTextLine) {
      out->failed = true;
      out->error = "line longer than " + std::to_string(kMaxTextLine) + " bytes (not an edge list?)";
      return;
    }
    const char* q = skip_blanks(p, e);
    if (q != e && *q != '#' && *q != '%') {
      InputEdge edge;
      bool ok = parse_id(&q, e, &edge.u, "source vertex id", &out->error);
      if (ok) {
        q = skip_blanks(q, e);
        ok = parse_id(&q, e, &edge.v, "target vertex id", &out->error);
      }
      uint32_t weight = 0;
      if (ok && weighted) {
        q = skip_blanks(q, e);
        ok = parse_weight(&q, e, &weight, &out->error);
      }
      if (!ok) {
        out->failed = true;
        return;
      }
      out->edges.push_back(edge);  // further columns (weights, timestamps) are ignored
      if (weighted) out->weights.push_back(weight);
    }
    p = nl != nullptr ? nl + 1 : end;
  }
}

}  // namespace peregrine::graph::detail

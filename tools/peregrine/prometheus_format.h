// The statistics of a mounted volume in the Prometheus text exposition
// format, version 0.0.4 (what node_exporter's textfile collector and a
// Prometheus scrape read), built from the daemon's statistics document (the
// root's user.peregrine.stats, fields in docs/usage.md). `peregrine stats
// --prometheus` prints it; docs/usage.md lists the metrics.
//
// Counters are totals since mount (Prometheus computes rates and handles
// the reset at a remount); latencies are histograms in seconds.
//
// Thread rules: pure functions of their arguments: any thread.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace peregrine::cli {

// The exposition of `doc` for the volume mounted at `mountpoint`.
// `fallback_volume` names the volume when the document does not (a daemon
// of an older release); sections such a daemon leaves out are left out of
// the exposition too. Throws nlohmann::json::exception or std::exception
// on a document without the fields every release publishes.
std::string prometheus_text(const nlohmann::json& doc, const std::string& mountpoint,
                            const std::string& fallback_volume);

// A label value as the format quotes it: backslash, double quote and line
// feed escaped (\\, \", \n); nothing else is.
std::string prometheus_label_value(std::string_view value);

// `ns` nanoseconds as an exact decimal number of seconds ("0.000001023",
// "2", "17.179869183"): bucket bounds and sums stay exact, with no float
// rounding in the text.
std::string prometheus_seconds(uint64_t ns);

}  // namespace peregrine::cli

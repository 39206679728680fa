// LogLine: how a part of the daemon says one line to its log, at a syslog
// priority (LOG_ERR ... LOG_DEBUG). The daemon makes one (daemon.cpp: the
// level filter, stderr or syslog) and passes it down to what logs: the
// transport, the member error log, online grow. Parts below them report
// through return values instead, and never log on their own.
//
// Thread rules: a LogLine may be called from any thread; the daemon's
// writes each line whole.
#pragma once

#include <functional>
#include <string>

namespace peregrine {

using LogLine = std::function<void(int priority, const std::string& line)>;

}  // namespace peregrine

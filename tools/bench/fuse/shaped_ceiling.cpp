// peregrine-shaped-ceiling: what the shaped FUSE benchmark could reach with
// a perfect pipeline. A closed loop keeps `depth` IOs outstanding (fio's
// QD); each goes to a uniformly random drive (4 KiB random IO striped over
// the members). A drive is ShapedDevice's model without bandwidth: at most
// `qd` IOs inside, starts paced at 1/iops, each done `latency` after its
// start. A finished IO spends `transit` outside any drive (the reply, the
// application, the FUSE request, the hand-off) before it arrives again.
// Prints completed IOs per second as a fraction of the drives' aggregate.
//
// Random routing alone leaves a drive idle now and then (its share of the
// outstanding IOs drains while another's piles up); the longer the transit,
// the fewer IOs wait at the drives and the more often that happens.
//
//   peregrine-shaped-ceiling [--drives 4] [--depth 128] [--iops 20000]
//                            [--latency-us 80] [--qd 32] [--transit-us 0,100,...]
#include <boost/program_options.hpp>
#include <cstdio>
#include <functional>
#include <iostream>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace po = boost::program_options;

namespace {

struct Params {
  int drives = 4;
  int depth = 128;
  double iops = 20000;
  double latency_s = 80e-6;
  int qd = 32;
  double seconds = 20;
};

double simulate(const Params& p, double transit_s) {
  struct Event {
    double t;
    bool done;  // false: an IO arrives at `drive`; true: the drive finishes one
    int drive;
    bool operator>(const Event& o) const { return t > o.t; }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> pick(0, p.drives - 1);
  std::vector<double> next_start(p.drives, 0.0);
  std::vector<int> inside(p.drives, 0), waiting(p.drives, 0);
  const double gap = 1.0 / p.iops;
  auto admit = [&](double t, int d) {
    ++inside[d];
    double start = std::max(t, next_start[d]);
    next_start[d] = start + gap;
    events.push({start + p.latency_s, true, d});
  };
  for (int i = 0; i < p.depth; ++i) events.push({0.0, false, pick(rng)});
  uint64_t completed = 0;
  while (!events.empty()) {
    Event e = events.top();
    events.pop();
    if (e.t > p.seconds) break;
    if (!e.done) {
      if (inside[e.drive] < p.qd) {
        admit(e.t, e.drive);
      } else {
        ++waiting[e.drive];
      }
      continue;
    }
    --inside[e.drive];
    ++completed;
    if (waiting[e.drive] > 0) {
      --waiting[e.drive];
      admit(e.t, e.drive);
    }
    events.push({e.t + transit_s, false, pick(rng)});
  }
  return completed / p.seconds / (p.iops * p.drives);
}

}  // namespace

int main(int argc, char** argv) {
  Params p;
  double latency_us = 80;
  std::string transits = "0,100,200,500,1000";
  po::options_description desc("peregrine-shaped-ceiling: the shaped benchmark's ceiling with a perfect pipeline");
  desc.add_options()("help,h", "this help")("drives", po::value(&p.drives)->default_value(4), "member drives")(
      "depth", po::value(&p.depth)->default_value(128), "IOs the application keeps outstanding")(
      "iops", po::value(&p.iops)->default_value(20000), "IOPS cap of each drive")(
      "latency-us", po::value(&latency_us)->default_value(80), "service latency of each drive")(
      "qd", po::value(&p.qd)->default_value(32), "IOs a drive serves at once")(
      "transit-us", po::value(&transits)->default_value(transits),
      "comma-separated times an IO spends outside the drives between two visits");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "peregrine-shaped-ceiling: %s\n", e.what());
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (p.drives < 1 || p.depth < 1 || p.iops <= 0 || p.qd < 1 || latency_us < 0) {
    std::fprintf(stderr, "peregrine-shaped-ceiling: drives, depth, iops and qd must be positive\n");
    return 2;
  }
  p.latency_s = latency_us * 1e-6;
  std::vector<double> transit_us;
  std::stringstream list(transits);
  std::string item;
  while (std::getline(list, item, ',')) {
    try {
      transit_us.push_back(std::stod(item));
    } catch (const std::exception&) {
      std::fprintf(stderr, "peregrine-shaped-ceiling: --transit-us: '%s' is not a number\n", item.c_str());
      return 2;
    }
  }
  std::printf("%d drives x %.0f IOPS (aggregate %.0f), QD %d each, %.0f us; %d IOs outstanding\n", p.drives, p.iops,
              p.iops * p.drives, p.qd, latency_us, p.depth);
  for (double t : transit_us) std::printf("transit %6.0f us: %.3f of the aggregate\n", t, simulate(p, t * 1e-6));
  return 0;
}

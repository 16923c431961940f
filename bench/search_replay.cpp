// Replays tune's smart search on an exhaustive sweep's journal: every point's score and wall time
// as that sweep measured them, so that search engines are compared on one space with one budget
// over many seeds (bench/optuna_replay.py drives Optuna on the table this writes). The space is
// rebuilt from the journal's experiment and workload, as tune built it, the guides' starts
// included.
//
//   search_replay JOURNAL --table OUT.json        the points: assignment, key, score, costs
//   search_replay JOURNAL FRACTION SEEDS          the smart search within FRACTION of the sweep's
//                                                 time, once per seed: JSON on stdout
//
// A brief point costs the sweep's wall less the measurement it skips (2 × (time − brief time));
// its score is the sweep's with log-normal noise of 3% (1% for a full one), seeded: a brief
// measurement ranks, it does not decide. The winner is the best point measured in full, judged by
// the sweep's own score.
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/sweep/search.h"
#include "torchperf/sweep/space.h"
#include "torchperf/sweep/tune_options.h"
#include "torchperf/worker/protocol.h"

using nlohmann::json;
using namespace torchperf;

namespace {

struct Table {
  Space space;
  std::vector<double> score, full_s, brief_s;  // per point; score 0: failed or not measured
  double sweep_s = 0, best = 0;
  std::vector<std::size_t> starts;
};

Table read_table(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  json header, session;
  std::map<std::string, json> points;
  while (std::getline(in, line)) {
    const json r = json::parse(line);
    const std::string kind = r.value("record", "");
    if (kind == "header") header = r;
    if (kind == "session" && session.is_null()) session = r;
    if (kind == "point") points[r.at("key").get<std::string>()] = r;
  }
  const auto description =
      from_reply<DescribeReply>(json{{"ok", true}, {"description", session.at("workload")}},
                                "the journal's workload").description;
  TuneOptions options;
  apply_experiment_json(header.at("experiment"), options);
  Table t;
  t.space = build_space(description.traits, options.space);
  const double time_s = options.workload.time_s;
  const double brief_time = std::min(time_s, std::max(0.2, time_s / 4));
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < t.space.points.size(); ++i) {
    const auto& p = t.space.points[i];
    index[p.key] = i;
    const auto it = points.find(p.key);
    const bool ok = it != points.end() && it->second.value("status", "") == "ok";
    t.score.push_back(ok ? it->second.at("score").get<double>() : 0);
    const double wall = it != points.end() ? it->second.value("wall_s", 0.0) : 0;
    t.full_s.push_back(wall);
    t.brief_s.push_back(std::max(0.1 * wall, wall - 2 * (time_s - brief_time)));
    t.sweep_s += wall;
    t.best = std::max(t.best, t.score.back());
  }
  for (const auto& start : t.space.expert_starts) {
    const auto it = index.find(resolve(start.config, description.traits).to_string());
    if (it != index.end()) t.starts.push_back(it->second);
  }
  return t;
}

json replay(const Table& t, double fraction, std::uint64_t seed) {
  SearchOptions options;
  options.seed = seed;
  options.finalists = 4;
  options.patience = std::numeric_limits<std::size_t>::max();
  options.tolerance = std::numeric_limits<double>::infinity();
  options.first = t.starts;
  auto search = make_search(SearchKind::kSmart, t.space, options);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 1);
  BudgetView budget(fraction * t.sweep_s, 0, 0);
  std::vector<double> brief, full;
  for (std::size_t i = 0; i < t.score.size(); ++i) {
    brief.push_back(t.brief_s[i]);
    full.push_back(t.full_s[i]);
  }
  budget.brief_point_s = t.sweep_s / static_cast<double>(t.score.size());
  budget.full_point_s = budget.brief_point_s;
  budget.point_s = [&](std::size_t i, bool is_brief) { return is_brief ? brief[i] : full[i]; };
  double spent = 0, best_measured = -1, winner = 0;
  std::size_t points = 0;
  while (auto p = search->next(budget)) {
    const double cost = budget.cost(p->point, p->brief);
    budget.remaining_s -= cost;
    spent += cost;
    ++points;
    const double truth = t.score[p->point];
    std::optional<double> seen;
    if (truth > 0) seen = truth * std::exp(noise(rng) * (p->brief ? 0.03 : 0.01));
    search->record(p->point, p->brief, seen);
    if (!p->brief && seen && *seen > best_measured) {
      best_measured = *seen;
      winner = truth;
    }
  }
  return {{"seed", seed},
          {"ratio", winner / t.best},
          {"spent_fraction", spent / t.sweep_s},
          {"points", points},
          {"search", search->spent()}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || (std::string(argv[2]) == "--table" && argc < 4)) {
    std::cerr << "usage: search_replay JOURNAL --table OUT.json | JOURNAL FRACTION SEEDS\n";
    return 2;
  }
  const Table t = read_table(argv[1]);
  if (std::string(argv[2]) == "--table") {
    json table = {{"sweep_s", t.sweep_s}, {"best", t.best}, {"starts", t.starts}, {"axes", json::array()},
                  {"points", json::array()}};
    for (const auto& a : t.space.axes) table["axes"].push_back({{"knob", a.knob}, {"values", a.values}});
    const auto assignments = point_assignments(t.space);
    for (std::size_t i = 0; i < t.score.size(); ++i)
      table["points"].push_back({{"key", t.space.points[i].key},
                                 {"assignment", assignments[i]},
                                 {"changes", t.space.points[i].changes},
                                 {"score", t.score[i]},
                                 {"full_s", t.full_s[i]},
                                 {"brief_s", t.brief_s[i]}});
    std::ofstream(argv[3]) << table.dump() << '\n';
    return 0;
  }
  const double fraction = std::stod(argv[2]);
  const int seeds = argc > 3 ? std::stoi(argv[3]) : 10;
  json out = {{"engine", "ridge"}, {"sweep_s", t.sweep_s}, {"points", t.score.size()},
              {"fraction", fraction}, {"runs", json::array()}};
  for (int s = 1; s <= seeds; ++s) out["runs"].push_back(replay(t, fraction, static_cast<std::uint64_t>(s)));
  std::cout << out.dump() << '\n';
  return 0;
}

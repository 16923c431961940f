#include "torchperf/train/ladder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/config/apply.h"
#include "torchperf/train/training_session.h"
#include "torchperf/train/training_side.h"

namespace torchperf {

double block_throughput(TrainingSession& s, const HeadToHeadOptions& o) {
  for (std::size_t i = 0; i < o.settle_steps; ++i) s.step(false);
  double ns = 0;
  std::int64_t samples = 0;
  for (std::size_t i = 0; i < o.steps; ++i) {
    const StepTimes t = s.step(false);
    ns += t.total_ns;
    samples += t.samples;
  }
  return static_cast<double>(samples) / (ns * 1e-9);
}

Speedup compare_throughputs(const std::function<double()>& a, const std::function<double()>& b,
                            const HeadToHeadOptions& o,
                            const std::function<void()>& after_block) {
  Speedup s;
  auto summarise = [&] {
    // The one estimator of interleaved ratios (measure/ratio_estimate.h), as bench --vs uses.
    const RatioEstimate e = estimate_ratio(s.rounds, o.confidence);
    s.ratio = e.ratio;
    s.interval = e.interval;
  };
  std::size_t rounds = o.rounds;
  for (std::size_t r = 0; r < rounds; ++r) {
    double ta = 0, tb = 0;
    if (r % 2 == 0) {
      ta = a();
      if (after_block) after_block();
      tb = b();
    } else {
      tb = b();
      if (after_block) after_block();
      ta = a();
    }
    if (after_block) after_block();
    s.rounds.push_back(tb / ta);
    if (r + 1 == rounds && rounds + 2 <= o.max_rounds) {
      summarise();
      if (!s.decided(o.min_gain)) rounds += 2;  // one A-first and one B-first round
    }
  }
  summarise();
  return s;
}

Speedup head_to_head(TrainingSession& a, TrainingSession& b, const HeadToHeadOptions& o,
                     const std::function<void()>& after_block) {
  // Both sides need the same process state: set once for the whole comparison, never between
  // blocks (LibTorch 1.13 rebuilds its thread pool on every set_num_threads).
  const ScopeExit restore_a(a.enter());
  const ScopeExit restore_b(b.enter());
  return compare_throughputs([&] { return block_throughput(a, o); },
                             [&] { return block_throughput(b, o); }, o, after_block);
}

namespace {

// A rung's own side: its session in this process (step=torchscript) or its Python worker.
struct RungSide {
  std::unique_ptr<TrainingSession> local;
  std::unique_ptr<RemoteTrainingSide> remote;
};

void add_once(std::vector<std::string>& list, const std::string& line) {
  if (std::find(list.begin(), list.end(), line) == list.end()) list.push_back(line);
}

// One line per held-back change: the top rung's estimate replaces an earlier rung's.
void hold_back(std::vector<std::string>& list, const std::string& change, const std::string& line) {
  for (auto& held : list)
    if (held.rfind(change + " (", 0) == 0) {
      held = line;
      return;
    }
  list.push_back(line);
}

// What a held-back change could give, on the breakdown's evidence alone: the step if the share
// its rule addresses were halved, and if it vanished (Amdahl's bound).
std::string estimate(const Advice& a) {
  const double share = std::clamp(a.weight, 0.0, 0.95);
  return fmt::format("{} ({}; changes what is learned): not tried; on this breakdown up to "
                     "{:.2f}x if the {:.0f}% it addresses halved, {:.2f}x if it vanished",
                     change_of(a), a.rule, 1.0 / (1.0 - share / 2), share * 100,
                     1.0 / (1.0 - share));
}

}  // namespace

LadderResult climb(const TrainingContext& context, const Configuration& start,
                   const LadderOptions& o, const LadderEvents& events) {
  auto say = [&](const std::string& what) {
    if (events.status) events.status(what);
  };
  const auto began = std::chrono::steady_clock::now();
  const auto elapsed_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  };
  LadderResult result;
  Configuration current = start;
  TrainingPlan current_plan = plan_of(context, current);
  say("step 0: the loop as given (" + (start.empty() ? std::string("defaults") : start.to_string()) +
      ")");
  const auto worker_run = [&](const std::string& prefix) {
    if (!o.workers)
      throw UsageError("step=" + current_plan.step +
                       " runs in a Python worker, and this ladder has no worker processes");
    WorkerRun run = *o.workers;
    run.log_prefix = prefix;
    return run;
  };
  RungSide side;
  Rung rung;
  rung.configuration = current;
  rung.in_python = current_plan.in_python();
  if (rung.in_python) {
    side.remote = std::make_unique<RemoteTrainingSide>(context, current, o.compare, o.warmup_steps,
                                                       worker_run("ladder-rung-0"), "rung 0");
    rung.compile_s = side.remote->compile_s();
    rung.breakdown = side.remote->breakdown(o.breakdown_steps);
  } else {
    side.local = std::make_unique<TrainingSession>(context, current);
    rung.breakdown = side.local->run(o.warmup_steps, o.breakdown_steps);
  }
  rung.advice = advise(rung.breakdown, context.advice_context(current_plan));
  rung.speedup.interval = {1, 1};
  result.rungs.push_back(rung);
  if (events.rung) events.rung(rung);

  const auto stopped = [&] {
    return Interrupted("train --ladder stopped after " + std::to_string(result.rungs.size() - 1) +
                       " kept change(s); continue from the last rung with --ladder --config '" +
                       current.to_string() + "'");
  };
  const auto stop_if_requested = [&] {
    if (events.stop_requested && events.stop_requested()) throw stopped();
  };
  std::set<std::string> tried;  // "configuration|change"
  enum class Outcome { kSkipped, kInapplicable, kStop, kLost, kKept };
  // One change tried head to head against the top rung; kept, it becomes the next rung.
  const auto try_change = [&](const Configuration& candidate, const std::string& change,
                              const std::string& rule, bool changes_training) -> Outcome {
    if (candidate.to_string() == current.to_string()) return Outcome::kSkipped;
    if (!tried.insert(current.to_string() + "|" + change).second) return Outcome::kSkipped;
    TrainingPlan candidate_plan;
    try {
      candidate_plan = plan_of(context, candidate);
    } catch (const ConfigError&) {
      return Outcome::kInapplicable;  // the advice is generic; the registry decides
    }
    stop_if_requested();
    if (o.budget_s > 0 && elapsed_s() >= o.budget_s) {
      result.stop_reason = fmt::format("reached --budget ({:.0f} s)", o.budget_s);
      return Outcome::kStop;
    }
    const bool separate = candidate_plan.in_python() || current_plan.in_python() ||
                          !process_state_differences(current, candidate).empty();
    if (separate && !o.workers && !o.verdict) {
      add_once(result.held_back,
               change + " (needs worker processes to compare: " +
                   (candidate_plan.in_python() || current_plan.in_python()
                        ? std::string("the step runs in Python")
                        : process_state_differences(current, candidate).front()) +
                   ")");
      return Outcome::kInapplicable;
    }
    say("step " + std::to_string(result.rungs.size()) + ": trying " + change + " head to head" +
        (separate ? " (each side in its own worker process)" : ""));
    Attempt attempt;
    attempt.change = change;
    attempt.rule = rule;
    attempt.separate_processes = separate;
    attempt.changes_training = changes_training;
    std::unique_ptr<TrainingSession> next;
    std::unique_ptr<RemoteTrainingSide> next_remote;
    if (o.verdict) {
      attempt.speedup = o.verdict(current, candidate);
    } else if (separate) {
      // Each side in a worker of its own, its process state set once there. A rung in Python
      // keeps its worker (and its compiled step) from one attempt to the next.
      const WorkerRun run = worker_run("ladder-" + std::to_string(result.attempts.size() + 1));
      std::unique_ptr<RemoteTrainingSide> fresh_a;
      RemoteTrainingSide* a = side.remote.get();
      if (a == nullptr) {
        fresh_a = std::make_unique<RemoteTrainingSide>(context, current, o.compare,
                                                       o.warmup_steps, run, "a");
        a = fresh_a.get();
      }
      next_remote = std::make_unique<RemoteTrainingSide>(context, candidate, o.compare,
                                                         o.warmup_steps, run, "b");
      attempt.compile_s = next_remote->compile_s();
      attempt.speedup = compare_throughputs([&] { return a->block(); },
                                            [&] { return next_remote->block(); }, o.compare,
                                            stop_if_requested);
    } else {
      next = std::make_unique<TrainingSession>(context, candidate);
      {
        const ScopeExit restore(next->enter());
        for (std::size_t i = 0; i < o.warmup_steps; ++i) next->step(false);
      }
      attempt.speedup = head_to_head(*side.local, *next, o.compare, stop_if_requested);
    }
    attempt.kept = attempt.speedup.wins(o.compare.min_gain);
    result.attempts.push_back(attempt);
    if (events.attempt) events.attempt(attempt);
    if (!attempt.kept) return Outcome::kLost;
    Rung r;
    r.step = result.rungs.size();
    r.change = change;
    r.rule = rule;
    r.changes_training = changes_training;
    r.configuration = candidate;
    r.in_python = candidate_plan.in_python();
    r.compile_s = attempt.compile_s;
    r.speedup = attempt.speedup;
    r.cumulative = result.rungs.back().cumulative * attempt.speedup.ratio;
    current = candidate;
    current_plan = candidate_plan;
    say("step " + std::to_string(r.step) + ": breakdown with " + change);
    if (r.in_python) {
      side.local.reset();
      if (!next_remote)
        next_remote = std::make_unique<RemoteTrainingSide>(
            context, candidate, o.compare, o.warmup_steps,
            worker_run("ladder-rung-" + std::to_string(r.step)), "rung");
      side.remote = std::move(next_remote);
      r.breakdown = side.remote->breakdown(o.breakdown_steps);
    } else {
      side.remote.reset();
      if (!next) {  // compared in workers: the new rung's session has not run here yet
        next = std::make_unique<TrainingSession>(context, candidate);
        const ScopeExit restore(next->enter());
        for (std::size_t i = 0; i < o.warmup_steps; ++i) next->step(false);
      }
      side.local = std::move(next);
      r.breakdown = side.local->run(0, o.breakdown_steps);
    }
    r.advice = advise(r.breakdown, context.advice_context(current_plan));
    result.rungs.push_back(r);
    if (events.rung) events.rung(result.rungs.back());
    return Outcome::kKept;
  };
  try {
    while (result.rungs.size() <= o.max_rungs && result.stop_reason.empty()) {
      // A copy: result.rungs grows inside the loop.
      const std::vector<Advice> advice_list = result.rungs.back().advice;
      const std::size_t first_attempt = result.attempts.size();
      bool kept = false;
      for (const Advice& advice : advice_list) {
        if (kept || !result.stop_reason.empty()) break;
        if (advice.knob.empty()) continue;
        if (advice.changes_training && !o.allow_semantic_changes) {
          hold_back(result.held_back, change_of(advice), estimate(advice));
          continue;
        }
        std::vector<std::string> values = {advice.value};
        values.insert(values.end(), advice.larger.begin(), advice.larger.end());
        double previous_ratio = 0;
        for (std::size_t v = 0; v < values.size(); ++v) {
          Configuration candidate = current;
          candidate.set(advice.knob, values[v]);
          for (const auto& [knob, value] : advice.with) candidate.set(knob, value);
          const Outcome outcome = try_change(candidate, change_of(advice, values[v]), advice.rule,
                                             advice.changes_training);
          if (outcome == Outcome::kSkipped) continue;
          if (outcome == Outcome::kKept) kept = true;
          if (outcome != Outcome::kLost) break;
          // A count is tried further only while each value gains more than the one before.
          const double ratio = result.attempts.back().speedup.ratio;
          if (v > 0 && ratio <= previous_ratio) break;
          previous_ratio = ratio;
        }
      }
      if (!kept && result.stop_reason.empty()) {
        // Gains too small for one head-to-head to tell (each interval reaching past 1 + the
        // minimum gain) may add up: those changes are tried once more, together.
        std::vector<const Attempt*> undecided;
        for (std::size_t i = first_attempt; i < result.attempts.size(); ++i)
          if (!result.attempts[i].speedup.decided(o.compare.min_gain) &&
              std::isfinite(result.attempts[i].speedup.interval.high))
            undecided.push_back(&result.attempts[i]);
        std::stable_sort(undecided.begin(), undecided.end(), [](const Attempt* x, const Attempt* y) {
          return x->speedup.ratio > y->speedup.ratio;
        });
        Configuration together = current;
        std::set<std::string> knobs;
        std::string change;
        bool changes_training = false;
        std::size_t parts = 0;
        for (const Attempt* a : undecided) {
          const Configuration fragment = Configuration::parse(a->change);
          bool clash = false;
          for (const auto& [knob, value] : fragment.values()) clash = clash || knobs.count(knob);
          if (clash) continue;  // another size of the same count gained more
          for (const auto& [knob, value] : fragment.values()) {
            knobs.insert(knob);
            together.set(knob, value);
          }
          change += (change.empty() ? "" : ",") + a->change;
          changes_training = changes_training || a->changes_training;
          ++parts;
        }
        if (parts >= 2 &&
            try_change(together, change, "together", changes_training) == Outcome::kKept)
          kept = true;
      }
      if (!kept && result.stop_reason.empty())
        result.stop_reason = "every advised change was tried at this rung and none won head to head";
    }
  } catch (const Interrupted&) {
    throw stopped();  // a worker stopped mid-comparison says only "interrupted"
  }
  if (result.stop_reason.empty()) result.stop_reason = "reached --max-rungs";
  return result;
}

}  // namespace torchperf

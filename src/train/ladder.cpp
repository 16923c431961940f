#include "torchperf/train/ladder.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
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
      if (!s.decided(o.min_gain) && (!o.may_extend || o.may_extend()))
        rounds += 2;  // one A-first and one B-first round
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

// A side of a head to head, wherever it runs: a session in this process, or a training worker of
// its own (its process state set once there, or the step in Python). The climb asks a side for
// blocks and breakdowns and never where it runs.
class LadderSide {
 public:
  virtual ~LadderSide() = default;
  virtual double block() = 0;  // one block's samples/s
  virtual Breakdown breakdown(std::size_t steps) = 0;
  virtual double compile_s() const { return -1; }
  // The process state a side in this process needs while it steps (set once per comparison).
  virtual Undo enter() const { return [] {}; }
  virtual bool in_worker() const = 0;
};

class SessionSide final : public LadderSide {
 public:
  // The loop as given warms up inside its first breakdown (run's warm-up); a side that is
  // compared warms up at once, untimed.
  SessionSide(const TrainingContext& context, const Configuration& config,
              const HeadToHeadOptions& compare, std::size_t warmup_steps, bool warm_in_breakdown)
      : session_(context, config), compare_(compare) {
    if (warm_in_breakdown) {
      pending_warmup_ = warmup_steps;
      return;
    }
    const ScopeExit restore(session_.enter());
    for (std::size_t i = 0; i < warmup_steps; ++i) session_.step(false);
  }
  double block() override { return block_throughput(session_, compare_); }
  Breakdown breakdown(std::size_t steps) override {
    const std::size_t warmup = pending_warmup_;
    pending_warmup_ = 0;
    return session_.run(warmup, steps);
  }
  Undo enter() const override { return session_.enter(); }
  bool in_worker() const override { return false; }

 private:
  TrainingSession session_;
  HeadToHeadOptions compare_;
  std::size_t pending_warmup_ = 0;
};

class WorkerSide final : public LadderSide {
 public:
  template <typename... A>
  explicit WorkerSide(A&&... a) : remote_(std::forward<A>(a)...) {}
  double block() override { return remote_.block(); }
  Breakdown breakdown(std::size_t steps) override { return remote_.breakdown(steps); }
  double compile_s() const override { return remote_.compile_s(); }
  bool in_worker() const override { return true; }

 private:
  RemoteTrainingSide remote_;
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

enum class Outcome { kSkipped, kInapplicable, kStop, kLost, kKept };

// A change proposed for the top rung.
struct Change {
  Configuration candidate;
  std::string change, rule;
  bool changes_training = false;
};

// The climb: the loop as given, then rung after rung, each change tried head to head against the
// top rung and kept when it wins.
class Climb {
 public:
  Climb(const TrainingContext& context, const LadderOptions& o, const LadderEvents& events,
        TimeSource& time)
      : context_(context), o_(o), events_(events), time_(time), began_(time.now()) {}

  LadderResult run(const Configuration& start) {
    first_rung(start);
    try {
      while (result_.rungs.size() <= o_.max_rungs && result_.stop_reason.empty()) {
        const std::size_t first_attempt = result_.attempts.size();
        held_for_budget_ = 0;
        bool kept = climb_rung();
        if (!kept && result_.stop_reason.empty()) kept = try_together(first_attempt);
        if (!kept && result_.stop_reason.empty())
          result_.stop_reason =
              held_for_budget_ > 0
                  ? fmt::format("reached --budget ({:.0f} s): {} change(s) left would not fit",
                                o_.budget_s, held_for_budget_)
                  : "every advised change was tried at this rung and none won head to head";
      }
    } catch (const Interrupted&) {
      throw stopped();  // a worker stopped mid-comparison says only "interrupted"
    }
    if (result_.stop_reason.empty()) result_.stop_reason = "reached --max-rungs";
    return std::move(result_);
  }

 private:
  void say(const std::string& what) const {
    if (events_.status) events_.status(what);
  }
  Interrupted stopped() const {
    return Interrupted("train --ladder stopped after " + std::to_string(result_.rungs.size() - 1) +
                       " kept change(s); continue from the last rung with --ladder --config '" +
                       current_.to_string() + "'");
  }
  void stop_if_requested() const {
    if (events_.stop_requested && events_.stop_requested()) throw stopped();
  }
  WorkerRun worker_run(const std::string& prefix) const {
    if (!o_.workers)
      throw UsageError("step=" + plan_.step +
                       " runs in a Python worker, and this ladder has no worker processes");
    WorkerRun run = *o_.workers;
    run.log_prefix = prefix;
    return run;
  }
  // A side for config: in a worker of its own, or a session in this process.
  std::unique_ptr<LadderSide> open(const Configuration& config, bool in_worker,
                                   const std::string& prefix, const std::string& name,
                                   bool first = false) const {
    if (in_worker)
      return std::make_unique<WorkerSide>(context_, config, o_.compare, o_.warmup_steps,
                                          worker_run(prefix), name);
    return std::make_unique<SessionSide>(context_, config, o_.compare, o_.warmup_steps, first);
  }

  void measure_first(Rung& rung) {
    rung.configuration = current_;
    rung.in_python = plan_.in_python();
    side_.reset();
    side_ = open(current_, rung.in_python, "ladder-rung-0", "rung 0", true);
    rung.compile_s = side_->compile_s();
    const Clock::time_point measuring = time_.now();
    rung.breakdown = side_->breakdown(o_.breakdown_steps);
    prices_.rung_s = to_seconds(time_.now() - measuring);
  }

  // Checkpointing the repeated blocks recomputes their activations in backward: what is learned
  // stays, what a forward keeps shrinks. `config` with it, where the step can run in Python and
  // the blocks are not checkpointed yet; nullopt where it cannot apply (a breakdown that measured
  // the activations and found no repeated blocks, a TorchScript-only model).
  std::optional<Configuration> with_blocks_checkpointed(const Configuration& config,
                                                        const Breakdown& measured) const {
    if (!context_.traits.python_definition) return std::nullopt;
    if (measured.activation_bytes > 0 && measured.checkpointed_activation_bytes <= 0)
      return std::nullopt;
    try {
      const TrainingPlan plan = plan_of(context_, config);
      if (plan.checkpoint != "off") return std::nullopt;
      Configuration out = config;
      out.set("checkpoint", "blocks");
      if (!plan.in_python()) out.set("step", "eager");  // checkpointing is the Python step's
      plan_of(context_, out);
      return out;
    } catch (const ConfigError&) {
      return std::nullopt;
    }
  }

  // A change that went over the memory, tried once more with the repeated blocks checkpointed:
  // under a cap, what makes a faster step fit.
  Outcome retry_checkpointed(const Change& c) {
    const std::optional<Configuration> candidate =
        with_blocks_checkpointed(c.candidate, result_.rungs.back().breakdown);
    if (!candidate) return Outcome::kInapplicable;
    std::string change = c.change;  // and what checkpointing brought with it
    for (const auto& [knob, value] : candidate->values())
      if (c.candidate.get(knob) != value)
        change += "," + knob + "=" + value;
    return attempt({*candidate, change, c.rule, c.changes_training});
  }

  void first_rung(const Configuration& start) {
    current_ = start;
    plan_ = plan_of(context_, current_);
    say("step 0: the loop as given (" +
        (start.empty() ? std::string("defaults") : start.to_string()) + ")");
    Rung rung;
    try {
      measure_first(rung);
    } catch (const ResourceLimit& over) {
      // Over the memory as given: the same learning with the repeated blocks checkpointed, if
      // it fits, is where the climb starts (and says so); else the first failure, and why.
      const std::optional<Configuration> fits = with_blocks_checkpointed(current_, Breakdown{});
      if (!fits) throw;
      say("step 0: the loop as given went over the memory; trying it with checkpoint=blocks");
      current_ = *fits;
      plan_ = plan_of(context_, current_);
      rung = Rung{};
      rung.change = "checkpoint=blocks";
      rung.rule = "memory";
      try {
        measure_first(rung);
      } catch (const ResourceLimit& still) {
        throw ResourceLimit(std::string(over.what()) + "; with checkpoint=blocks too: " +
                            still.what());
      }
      result_.notes.push_back(
          "the loop as given went over the memory (" + std::string(over.what()) +
          "); step 0 checkpoints its repeated blocks (checkpoint=blocks: what is learned stays, "
          "their activations are recomputed in backward), and the climb starts there");
    }
    rung.advice = advise(rung.breakdown, context_.advice_context(plan_));
    rung.speedup.interval = {1, 1};
    result_.rungs.push_back(rung);
    if (rung.compile_s > 0) prices_.compile_s = rung.compile_s;
    prices_.comparison_s = to_seconds(time_.now() - began_);
    if (events_.rung) events_.rung(rung);
  }

  // Under a budget, the rung's advice by expected gain per second of trying it (a change that
  // compiles pays its compile first); unbudgeted, as advised (the largest share first).
  std::vector<Advice> ordered(const std::vector<Advice>& advice) const {
    if (o_.budget_s <= 0) return advice;
    std::vector<double> weights, prices;
    for (const Advice& a : advice) {
      weights.push_back(a.weight);
      prices.push_back(price_of_attempt(prices_, compiles(candidate_of(a, a.value))));
    }
    std::vector<Advice> out;
    for (std::size_t i : order_by_gain_per_second(weights, prices)) out.push_back(advice[i]);
    return out;
  }
  // The top rung with the advice's knob at `value` and the knobs it comes with.
  Configuration candidate_of(const Advice& advice, const std::string& value) const {
    Configuration candidate = current_;
    if (!advice.knob.empty()) candidate.set(advice.knob, value);
    for (const auto& [knob, with] : advice.with) candidate.set(knob, with);
    return candidate;
  }
  bool compiles(const Configuration& candidate) const {
    try {
      return plan_of(context_, candidate).compiled();
    } catch (const ConfigError&) {
      return false;  // refused where it is tried
    }
  }

  // Each advised change in turn, a count tried further only while each value gains more than the
  // one before; true once one is kept.
  bool climb_rung() {
    const std::vector<Advice> advice_list = ordered(result_.rungs.back().advice);  // rungs grow
    for (const Advice& advice : advice_list) {
      if (!result_.stop_reason.empty()) return false;
      if (advice.knob.empty()) continue;
      if (advice.changes_training && !o_.allow_semantic_changes) {
        hold_back(result_.held_back, change_of(advice), estimate(advice));
        continue;
      }
      std::vector<std::string> values = {advice.value};
      values.insert(values.end(), advice.larger.begin(), advice.larger.end());
      double previous_ratio = 0;
      for (std::size_t v = 0; v < values.size(); ++v) {
        Change c{candidate_of(advice, values[v]), change_of(advice, values[v]), advice.rule,
                 advice.changes_training};
        const Outcome outcome = attempt(c);
        if (outcome == Outcome::kSkipped) continue;
        if (outcome == Outcome::kKept) return true;
        if (outcome != Outcome::kLost) break;
        if (!result_.attempts.back().failure.empty()) {  // a larger one would not run either
          if (result_.attempts.back().out_of_memory && retry_checkpointed(c) == Outcome::kKept)
            return true;
          break;
        }
        const double ratio = result_.attempts.back().speedup.ratio;
        if (v > 0 && ratio <= previous_ratio) break;
        previous_ratio = ratio;
      }
    }
    return false;
  }

  // Gains too small for one head-to-head to tell (each interval reaching past 1 + the minimum
  // gain) may add up: those changes are tried once more, together.
  bool try_together(std::size_t first_attempt) {
    std::vector<const Attempt*> undecided;
    for (std::size_t i = first_attempt; i < result_.attempts.size(); ++i)
      if (!result_.attempts[i].speedup.decided(o_.compare.min_gain) &&
          std::isfinite(result_.attempts[i].speedup.interval.high))
        undecided.push_back(&result_.attempts[i]);
    std::stable_sort(undecided.begin(), undecided.end(), [](const Attempt* x, const Attempt* y) {
      return x->speedup.ratio > y->speedup.ratio;
    });
    Change together{current_, "", "together", false};
    std::set<std::string> knobs;
    std::size_t parts = 0;
    for (const Attempt* a : undecided) {
      const Configuration fragment = Configuration::parse(a->change);
      bool clash = false;
      for (const auto& [knob, value] : fragment.values()) clash = clash || knobs.count(knob);
      if (clash) continue;  // another size of the same count gained more
      for (const auto& [knob, value] : fragment.values()) {
        knobs.insert(knob);
        together.candidate.set(knob, value);
      }
      together.change += (together.change.empty() ? "" : ",") + a->change;
      together.changes_training = together.changes_training || a->changes_training;
      ++parts;
    }
    return parts >= 2 && attempt(together) == Outcome::kKept;
  }

  // One change head to head against the top rung; kept, it becomes the next rung.
  Outcome attempt(const Change& c) {
    if (c.candidate.to_string() == current_.to_string()) return Outcome::kSkipped;
    if (!tried_.insert(current_.to_string() + "|" + c.change).second) return Outcome::kSkipped;
    TrainingPlan candidate_plan;
    try {
      candidate_plan = plan_of(context_, c.candidate);
    } catch (const ConfigError&) {
      return Outcome::kInapplicable;  // the advice is generic; the registry decides
    }
    stop_if_requested();
    const double elapsed = o_.budget_s > 0 ? to_seconds(time_.now() - began_) : 0;
    if (o_.budget_s > 0 && elapsed >= o_.budget_s) {
      result_.stop_reason = fmt::format("reached --budget ({:.0f} s)", o_.budget_s);
      return Outcome::kStop;
    }
    if (o_.budget_s > 0) {
      const double left = o_.budget_s - elapsed;
      const double price = price_of_attempt(prices_, candidate_plan.compiled());
      if (price > left) {
        hold_back(result_.held_back, c.change,
                  fmt::format("{} ({}): not tried; it needs ~{:.0f} s ({}a comparison and, if "
                              "kept, its breakdown), {:.0f} s of --budget were left",
                              c.change, c.rule, price,
                              candidate_plan.compiled() ? "a compile, " : "", left));
        ++held_for_budget_;
        return Outcome::kInapplicable;
      }
    }
    const std::vector<std::string> state = process_state_differences(current_, c.candidate);
    const bool python = candidate_plan.in_python() || plan_.in_python();
    const bool separate = python || !state.empty();
    if (separate && !o_.workers && !o_.verdict) {
      add_once(result_.held_back, c.change + " (needs worker processes to compare: " +
                                      (python ? std::string("the step runs in Python") : state.front()) +
                                      ")");
      return Outcome::kInapplicable;
    }
    say("step " + std::to_string(result_.rungs.size()) + ": trying " + c.change + " head to head" +
        (separate ? " (each side in its own worker process)" : ""));
    Attempt a;
    a.change = c.change;
    a.rule = c.rule;
    a.separate_processes = separate;
    a.changes_training = c.changes_training;
    std::unique_ptr<LadderSide> next;
    const Clock::time_point started = time_.now();
    try {
      if (o_.verdict) {
        a.speedup = o_.verdict(current_, c.candidate);
      } else {
        next = compare(c.candidate, separate, a);
      }
    } catch (const ResourceLimit& e) {
      a.failure = e.what();  // over --memory-cap (or the device's): this batch does not fit
      a.out_of_memory = true;
    } catch (const ConfigError& e) {
      a.failure = e.what();  // refused where it runs (DDP, the checkpoint wrapper)
    }
    if (!a.failure.empty()) {
      a.speedup.ratio = 0;
      a.speedup.interval = {0, 0};
      next.reset();
    }
    if (a.failure.empty()) learn_prices(a, to_seconds(time_.now() - started));
    a.kept = a.failure.empty() && a.speedup.wins(o_.compare.min_gain);
    result_.attempts.push_back(a);
    if (events_.attempt) events_.attempt(a);
    if (!a.kept) return Outcome::kLost;
    keep(c, candidate_plan, a, std::move(next));
    return Outcome::kKept;
  }

  // The top rung against the candidate: in two workers when they differ in process state or
  // either steps in Python (a rung in Python keeps its worker and compiled step), else both here,
  // their common process state entered once. The candidate's side, for its rung if kept.
  std::unique_ptr<LadderSide> compare(const Configuration& candidate, bool separate, Attempt& a) {
    const std::string prefix = "ladder-" + std::to_string(result_.attempts.size() + 1);
    std::unique_ptr<LadderSide> fresh_a;
    LadderSide* top = side_.get();
    if (separate && !top->in_worker()) {
      fresh_a = open(current_, true, prefix, "a");
      top = fresh_a.get();
    }
    std::unique_ptr<LadderSide> next = open(candidate, separate, prefix, "b");
    a.compile_s = next->compile_s();
    const ScopeExit restore_top(top->enter());
    const ScopeExit restore_next(next->enter());
    HeadToHeadOptions within = o_.compare;  // no rounds past --budget beyond the first ones
    if (o_.budget_s > 0)
      within.may_extend = [this] { return to_seconds(time_.now() - began_) < o_.budget_s; };
    a.speedup = compare_throughputs([&] { return top->block(); }, [&] { return next->block(); },
                                    within, [this] { stop_if_requested(); });
    return next;
  }

  // A compile's price is the largest measured; a comparison's, the last measured apart from it.
  void learn_prices(const Attempt& a, double took_s) {
    if (a.compile_s > 0) prices_.compile_s = std::max(prices_.compile_s, a.compile_s);
    prices_.comparison_s = std::max(0.0, took_s - std::max(0.0, a.compile_s));
  }

  void keep(const Change& c, const TrainingPlan& candidate_plan, const Attempt& a,
            std::unique_ptr<LadderSide> next) {
    Rung r;
    r.step = result_.rungs.size();
    r.change = c.change;
    r.rule = c.rule;
    r.changes_training = c.changes_training;
    r.configuration = c.candidate;
    r.in_python = candidate_plan.in_python();
    r.compile_s = a.compile_s;
    r.speedup = a.speedup;
    r.cumulative = result_.rungs.back().cumulative * a.speedup.ratio;
    current_ = c.candidate;
    plan_ = candidate_plan;
    say("step " + std::to_string(r.step) + ": breakdown with " + c.change);
    // The rung runs where its step does: its compared side when that is where, else a new one.
    side_.reset();
    if (next && next->in_worker() == r.in_python)
      side_ = std::move(next);
    else
      side_ = open(current_, r.in_python, "ladder-rung-" + std::to_string(r.step), "rung");
    const Clock::time_point measuring = time_.now();
    r.breakdown = side_->breakdown(o_.breakdown_steps);
    prices_.rung_s = to_seconds(time_.now() - measuring);
    r.advice = advise(r.breakdown, context_.advice_context(plan_));
    result_.rungs.push_back(r);
    if (events_.rung) events_.rung(result_.rungs.back());
  }

  const TrainingContext& context_;
  const LadderOptions& o_;
  const LadderEvents& events_;
  TimeSource& time_;
  Clock::time_point began_;
  LadderResult result_;
  Configuration current_;
  TrainingPlan plan_;
  std::unique_ptr<LadderSide> side_;
  std::set<std::string> tried_;  // "configuration|change"
  AttemptPrices prices_{0, kCompilePriorS, 0};
  std::size_t held_for_budget_ = 0;  // changes not started at this rung: their price did not fit
};

}  // namespace

double price_of_attempt(const AttemptPrices& prices, bool compiles) {
  return prices.comparison_s + (compiles ? prices.compile_s : 0) + prices.rung_s;
}

std::vector<std::size_t> order_by_gain_per_second(const std::vector<double>& weights,
                                                  const std::vector<double>& prices_s) {
  std::vector<std::size_t> order(weights.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  constexpr double kFloorS = 1e-3;  // a price measured as nothing (an injected clock)
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return weights[x] / std::max(prices_s[x], kFloorS) > weights[y] / std::max(prices_s[y], kFloorS);
  });
  return order;
}

LadderResult climb(const TrainingContext& context, const Configuration& start,
                   const LadderOptions& o, const LadderEvents& events, TimeSource& time) {
  return Climb(context, o, events, time).run(start);
}

}  // namespace torchperf

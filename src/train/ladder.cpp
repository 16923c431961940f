#include "torchperf/train/ladder.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

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

LadderResult climb(const TrainingContext& context, const Configuration& start,
                   const LadderOptions& o, const LadderEvents& events) {
  auto say = [&](const std::string& what) {
    if (events.status) events.status(what);
  };
  LadderResult result;
  Configuration current = start;
  say("step 0: the loop as given (" + (start.empty() ? std::string("defaults") : start.to_string()) +
      ")");
  auto session = std::make_unique<TrainingSession>(context, current);
  Rung rung;
  rung.configuration = current;
  rung.breakdown = session->run(o.warmup_steps, o.breakdown_steps);
  rung.advice = advise(rung.breakdown, context.advice_context(session->plan()));
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
  std::set<std::string> tried;  // "knob=value" from the configuration it was tried on
  try {
    while (result.rungs.size() <= o.max_rungs) {
      // Copies: result.rungs grows inside the loop.
      const std::vector<Advice> advice_list = result.rungs.back().advice;
      const double cumulative = result.rungs.back().cumulative;
      bool kept = false;
      for (const Advice& advice : advice_list) {
        if (advice.knob.empty()) continue;
        const std::string change = advice.knob + "=" + advice.value;
        if (current.get(advice.knob) == advice.value) continue;
        if (advice.changes_training && !o.allow_semantic_changes) {
          const std::string held = change + " (" + advice.rule + ")";
          if (std::find(result.held_back.begin(), result.held_back.end(), held) ==
              result.held_back.end())
            result.held_back.push_back(held);
          continue;
        }
        if (!tried.insert(current.to_string() + "|" + change).second) continue;
        stop_if_requested();
        Configuration candidate = current;
        candidate.set(advice.knob, advice.value);
        std::unique_ptr<TrainingSession> next;
        try {
          next = std::make_unique<TrainingSession>(context, candidate);
        } catch (const ConfigError&) {
          continue;  // does not apply here (the advice is generic; the registry decides)
        }
        const bool separate = !process_state_differences(current, candidate).empty();
        if (separate && !o.workers) {
          const std::string held = change + " (needs worker processes to compare: " +
                                   process_state_differences(current, candidate).front() + ")";
          if (std::find(result.held_back.begin(), result.held_back.end(), held) ==
              result.held_back.end())
            result.held_back.push_back(held);
          continue;
        }
        say("step " + std::to_string(result.rungs.size()) + ": trying " + change + " head to head" +
            (separate ? " (each side in its own worker process)" : ""));
        Attempt attempt;
        attempt.change = change;
        attempt.rule = advice.rule;
        attempt.separate_processes = separate;
        if (separate) {
          // Each side a fresh session in a worker of its own, its threads set once there.
          WorkerRun run = *o.workers;
          run.log_prefix = "ladder-" + std::to_string(result.attempts.size() + 1);
          RemoteTrainingSide a(context.spec, current, o.compare, o.warmup_steps, run, "a");
          RemoteTrainingSide b(context.spec, candidate, o.compare, o.warmup_steps, run, "b");
          attempt.speedup = compare_throughputs([&] { return a.block(); },
                                                [&] { return b.block(); }, o.compare,
                                                stop_if_requested);
        } else {
          {
            const ScopeExit restore(next->enter());
            for (std::size_t i = 0; i < o.warmup_steps; ++i) next->step(false);
          }
          attempt.speedup = head_to_head(*session, *next, o.compare, stop_if_requested);
        }
        attempt.kept = attempt.speedup.wins(o.compare.min_gain);
        result.attempts.push_back(attempt);
        if (events.attempt) events.attempt(attempt);
        if (!attempt.kept) continue;
        Rung r;
        r.step = result.rungs.size();
        r.change = change;
        r.rule = advice.rule;
        r.changes_training = advice.changes_training;
        r.configuration = candidate;
        r.speedup = attempt.speedup;
        r.cumulative = cumulative * attempt.speedup.ratio;
        session = std::move(next);
        current = candidate;
        if (separate) {  // the new rung's session has not run yet in this process
          const ScopeExit restore(session->enter());
          for (std::size_t i = 0; i < o.warmup_steps; ++i) session->step(false);
        }
        say("step " + std::to_string(r.step) + ": breakdown with " + change);
        r.breakdown = session->run(0, o.breakdown_steps);
        r.advice = advise(r.breakdown, context.advice_context(session->plan()));
        result.rungs.push_back(r);
        if (events.rung) events.rung(result.rungs.back());
        kept = true;
        break;
      }
      if (!kept) {
        result.stop_reason = "no advised change won head to head";
        break;
      }
    }
  } catch (const Interrupted&) {
    throw stopped();  // a worker stopped mid-comparison says only "interrupted"
  }
  if (result.stop_reason.empty()) result.stop_reason = "reached --max-rungs";
  return result;
}

}  // namespace torchperf

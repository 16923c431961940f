#include "generate_command.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "budget_option.h"
#include "exit_codes.h"
#include "progress_bar.h"
#include "report_files.h"
#include "stop_signals.h"
#include "torchperf/error.h"
#include "torchperf/generate/generation_report.h"
#include "torchperf/sweep/tune_options.h"
#include "torchperf/text.h"

namespace torchperf::cli {

void add_generation_flags(CLI::App& cmd, GenerationFlags& f) {
  cmd.add_flag("--generate", f.generate,
               "Text generation: time a transformers causal LM's generate (prefill and decode "
               "apart) across the generation knobs; implied by a model hf:PATH");
  cmd.add_option("--prompt", f.prompt,
                 "Generation: each prompt's length in tokens (128), or a distribution as --dim "
                 "takes one (32..512, lognormal:MEDIAN:SIGMA:MIN..MAX, file:LENGTHS)")
      ->default_val("128");
  cmd.add_option("--new-tokens", f.new_tokens, "Generation: new tokens per call (greedy)")
      ->default_val(64);
  cmd.add_option("--slo", f.slo,
                 "Generation: latency objective, the best decode tokens/s that holds it: "
                 "ttft=500ms,tpot=30ms (p99s), mlperf-llama3.1-8b or mlperf-interactive");
  cmd.add_option("--calls", f.calls, "Generation: timed generate calls per point (6 give the median an interval)")->default_val(6);
}

bool wants_generation(const GenerationFlags& flags, const std::string& model) {
  return flags.generate || names_generation_model(model);
}

namespace {

// The run's folder as tune names it: the model folder's name, or the factory's module.
std::string default_out(const LanguageModelSource& source) {
  const bool folder = source.kind == LanguageModelSource::Kind::kHfFolder;
  return default_out_dir((folder ? source.location : source.location.substr(0, source.location.find(':'))) +
                         "-generate");
}

GenerationTuneOptions options_from(const GenerationFlags& f, const SharedTuneFlags& s) {
  GenerationTuneOptions o;
  o.workload.source = parse_model_source(names_generation_model(s.model) ? s.model : "",
                                         s.from_python);
  if (!s.model.empty() && !names_generation_model(s.model))
    throw UsageError("model '" + s.model + "': a generation tune takes hf:PATH or --from-python");
  o.workload.prompt = parse_prompt_lengths(f.prompt);
  o.workload.new_tokens = f.new_tokens;
  o.workload.timed_calls = f.calls;
  o.workload.seed = s.seed;
  o.workload.device = s.device == "auto" || s.device.empty() ? "cpu" : s.device;
  check_workload(o.workload);
  o.space = parse_generation_space(s.space);
  for (const auto& [knob, values] : s.knob_values) {
    if (knob == "batch") {
      o.batches.clear();
      for (const auto& v : split(values, ',')) {
        const auto n = positive_whole_number(v);
        if (!n) throw UsageError("--batch '" + values + "': expected positive integers");
        o.batches.push_back(*n);
      }
    } else if (knob == "threads") {
      if (o.space.count("threads"))
        throw UsageError("threads is given both by --space and by --threads");
      o.space["threads"] = split(values, ',');
      parse_generation_space("threads=" + values);  // checks each value
    } else {
      throw UsageError("--" + knob + " is not a generation knob; give generation knobs in --space "
                       "(engine, precision, weights, cache, compile, compile_mode, fullgraph, "
                       "attention, threads)");
    }
  }
  o.slo = GenerationSlo::parse(f.slo);
  if (!s.accuracy.empty()) o.guard = AccuracyGuard::parse(s.accuracy);
  o.budget_s = s.budget.empty() ? 300 : budget_seconds(s.budget);
  if (!s.point_timeout.empty()) o.limits.timeout_s = parse_duration(s.point_timeout, "--point-timeout");
  if (!s.memory_cap.empty()) o.limits.memory_cap_bytes = parse_size(s.memory_cap, "--memory-cap");
  o.out_dir = s.out.empty() ? default_out(o.workload.source) : s.out;
  o.limits.stop_requested = [] { return StopSignals::requested(); };
  return o;
}

}  // namespace

int run_generation_tune_command(const GenerationFlags& flags, const SharedTuneFlags& shared) {
  const auto o = options_from(flags, shared);
  std::optional<StopSignals> stop_signals(std::in_place);
  ProgressBar bar(!shared.quiet && isatty(STDERR_FILENO));
  if (!shared.quiet) std::cerr << "tune: generation results go to " << o.out_dir << "/generation.jsonl\n";
  const auto started = std::chrono::steady_clock::now();
  const auto progress = [&](std::size_t done, std::size_t planned, const std::string& doing) {
    const double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const double fraction = o.budget_s > 0 ? std::min(1.0, spent / o.budget_s)
                            : planned ? static_cast<double>(done) / planned : 0;
    bar.show(fraction, doing, o.budget_s > 0 ? std::max(0.0, o.budget_s - spent) : 0);
  };
  GenerationTuneResult result;
  try {
    result = run_generation_tune(o, progress);
  } catch (...) {
    bar.finish();
    throw;
  }
  bar.finish();
  write_text_file(o.out_dir + "/result.json", generation_result_json(result).dump(2) + "\n");
  write_text_file(o.out_dir + "/report.html", generation_page(result, o.workload.source.text()));
  if (!shared.quiet) std::cerr << "tune: report written to " << o.out_dir << "/report.html\n";
  if (shared.json)
    std::cout << generation_result_json(result).dump(2) << "\n";
  else
    std::cout << format_generation_result(result);
  return result.winner ? kSuccess : kInvalidResult;
}

}  // namespace torchperf::cli

#include "torchperf/trace/trace_analysis.h"

#include "torchperf/trace/trace_advice.h"

namespace torchperf {

TraceAnalysis analyze_trace(const Trace& trace, bool operators_by_shape,
                            std::size_t sequence_length) {
  TraceAnalysis a;
  TraceInfo& i = a.info;
  i.path = trace.path;
  i.form = trace.form;
  i.rank = trace.rank;
  i.world_size = trace.world_size;
  i.backend = trace.backend;
  i.devices = trace.devices;
  i.events = trace.events;
  i.ignored = trace.ignored;
  i.host_events = trace.host.size();
  i.device_events = trace.device.size();
  i.threads = trace.threads.size();
  i.skips = trace.skips;
  i.file_bytes = trace.file_bytes;
  i.json_bytes = trace.json_bytes;
  i.compressed = trace.compressed;
  a.overview = overview(trace);
  a.operators = operator_view(trace, operators_by_shape);
  a.kernels = kernel_view(trace);
  a.copies = copy_view(trace);
  a.launches = launch_stats(trace);
  a.sequence_length = sequence_length;
  a.sequences = kernel_sequences(trace, sequence_length);
  a.advice = advise_trace(trace, a.overview, a.kernels, a.launches);
  return a;
}

}  // namespace torchperf

"""A saved result's folder, as result.save writes it and apply reads it: where its artefacts lie,
and the exit code of a folder that is missing, damaged or foreign (docs/cli.md). Its own module so
that apply reads it without importing result, which imports apply."""
from torchperf.error_kinds import ErrorKind

# In a saved folder: the AOTInductor package, torch.compile's cache, an engine's conversion.
ARTIFACTS = "artifacts"
RESULTS_ERROR = ErrorKind.RESULTS.exit_code

"""torchperf's Python side.

The C++ tool runs these modules as child processes with the project's .venv interpreter, never
linked in: exporting a user's model (export_source), compiling a torch.export program with
AOTInductor (aoti_compile) and running a program eagerly for the fp32 reference (eager_reference).
Each prints one JSON line on stdout and, on failure, one line on stderr and a distinct exit code
(see _child.py).
"""

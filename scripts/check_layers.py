#!/usr/bin/env python3
"""Checks that each part includes only the parts before it in the layer order that docs/design.md
gives (the `src/<part>/` row of its layout table): the link graph misses a header-only backward
include, this does not. Exits 1 naming each include out of order.

Also: no circle among the Python side's modules (python/torchperf), counting the imports inside
functions too (a child program that imports the user's API through one is how one grew).

usage: check_layers.py SOURCE_DIR [--apart A:B ...] [--runtime-names]
  --apart A:B      A may not include B even though B comes before it (train and sweep: both use
                   the worker part, and neither reaches into the other for it).
  --runtime-names  also: no file outside the runtime part tests a runtime's name, a family, a
                   graph or step value by name or prefix (== "aoti", rfind("compile", 0), ...):
                   callers ask the runtime (docs/design.md, the runtime part)."""
import ast
import os
import re
import sys


def layer_order(design_md):
    for line in open(design_md, encoding="utf-8"):
        if line.startswith("| `src/<part>/` |") and "in layer order:" in line:
            cell = line.split("in layer order:", 1)[1]
            # The part names are the backticked words that open each "name (what it holds)".
            return re.findall(r"`([a-z_]+)` \(", cell)
    sys.exit(f"check_layers: no layer order in {design_md} (the `src/<part>/` row of its layout)")


# What the runtime part alone may compare: its runtimes' names, the runtime knob's families, and
# the graph and training-step values they run. Each must still appear in src/runtime/ (the list
# does not go stale).
RUNTIME_VALUES = ["torchscript", "aoti", "python-eager", "python-compile", "cpp", "python",
                  "eager", "frozen", "frozen-opt", "fused", "aoti-max-autotune", "compile",
                  "compile-reduce-overhead", "compile-max-autotune",
                  "compile-max-autotune-no-cudagraphs"]


def runtime_name_tests(root):
    """Each place outside the runtime part that tests a runtime or graph value by name or prefix."""
    values = "|".join(re.escape(v) for v in sorted(RUNTIME_VALUES, key=len, reverse=True))
    tests = re.compile(r'(==|!=)\s*"(%s)"|"(%s)"\s*(==|!=)|(rfind|find|starts_with|compare)\('
                       r'"(%s)"' % (values, values, values))
    runtime_sources = ""
    for here, _, files in os.walk(os.path.join(root, "src", "runtime")):
        for name in files:
            runtime_sources += open(os.path.join(here, name), encoding="utf-8").read()
    wrong = [f"src/runtime/: no longer has \"{v}\" (update RUNTIME_VALUES in {__file__})"
             for v in RUNTIME_VALUES if f'"{v}"' not in runtime_sources]
    for top in ("src", "include", "apps"):
        for here, _, files in os.walk(os.path.join(root, top)):
            rel = os.path.relpath(here, root)
            if rel.startswith(os.path.join("src", "runtime")) or \
                    rel.startswith(os.path.join("include", "torchperf", "runtime")):
                continue
            for name in sorted(files):
                if not name.endswith((".cpp", ".h")):
                    continue
                path = os.path.join(here, name)
                for number, line in enumerate(open(path, encoding="utf-8"), 1):
                    code = line.split("//", 1)[0]
                    if tests.search(code):
                        wrong.append(f"{os.path.relpath(path, root)}:{number}: tests a runtime or "
                                     f"graph value by name: {line.strip()}")
    return wrong


def python_imports(root):
    """Each module of python/torchperf -> the package's modules it imports, anywhere in it (in a
    function too; aliases and parenthesised lists read by Python's own parser)."""
    package = os.path.join(root, "python", "torchperf")
    modules = {n[:-3] for n in os.listdir(package) if n.endswith(".py")}
    graph = {}
    for module in sorted(modules):
        tree = ast.parse(open(os.path.join(package, module + ".py"), encoding="utf-8").read())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "torchperf":
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torchperf."):
                found.add(node.module.split(".")[1])
            elif isinstance(node, ast.Import):
                found.update(alias.name.split(".")[1] for alias in node.names
                             if alias.name.startswith("torchperf."))
        graph[module] = sorted((found & modules) - {module})
    return graph


def python_circles(root):
    """Each circle of imports among the Python side's modules, as a path that returns to its start."""
    graph = python_imports(root)
    circles, state = [], {}

    def visit(module, path):
        state[module] = "open"
        for other in graph[module]:
            if state.get(other) == "open":
                circles.append(" -> ".join(path[path.index(other):] + [other]))
            elif other not in state:
                visit(other, path + [other])
        state[module] = "done"

    for module in graph:
        if module not in state:
            visit(module, [module])
    return [f"python/torchperf: an import circle: {c}" for c in circles]


def main(argv):
    apart = set()
    args = []
    names = False
    it = iter(argv)
    for a in it:
        if a == "--runtime-names":
            names = True
        elif a == "--apart":
            pair = next(it, "")
            if ":" not in pair:
                sys.exit(__doc__)
            apart.add(tuple(pair.split(":", 1)))
        else:
            args.append(a)
    if len(args) != 1:
        sys.exit(__doc__)
    root = args[0]
    order = layer_order(os.path.join(root, "docs", "design.md"))
    rank = {part: i for i, part in enumerate(order)}
    wrong = []
    for top in ("src", os.path.join("include", "torchperf")):
        for part in sorted(os.listdir(os.path.join(root, top))):
            folder = os.path.join(root, top, part)
            if not os.path.isdir(folder):
                continue
            if part not in rank:
                wrong.append(f"{top}/{part}: a part docs/design.md does not place in its layer order")
                continue
            for here, _, files in os.walk(folder):
                for name in sorted(files):
                    path = os.path.join(here, name)
                    with open(path, encoding="utf-8") as f:
                        for number, line in enumerate(f, 1):
                            m = re.match(r'\s*#\s*include\s+"torchperf/([a-z_]+)/', line)
                            if not m or m.group(1) == part:
                                continue
                            where = os.path.relpath(path, root)
                            if rank.get(m.group(1), len(order)) > rank[part]:
                                wrong.append(f"{where}:{number}: {part} includes {m.group(1)}, "
                                             f"which comes after it")
                            elif (part, m.group(1)) in apart:
                                wrong.append(f"{where}:{number}: {part} includes {m.group(1)}, "
                                             f"which it must keep apart from")
    if names:
        wrong += runtime_name_tests(root)
    wrong += python_circles(root)
    for w in wrong:
        print(w)
    if wrong:
        return 1
    print(f"{len(order)} parts in layer order: {' < '.join(order)}"
          + "".join(f"; {a} apart from {b}" for a, b in sorted(apart))
          + ("; no runtime or graph value tested by name outside the runtime part" if names else "")
          + "; no import circle in python/torchperf")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

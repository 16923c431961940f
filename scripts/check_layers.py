#!/usr/bin/env python3
"""Checks that each part includes only the parts before it in the layer order that docs/design.md
gives (the `src/<part>/` row of its layout table): the link graph misses a header-only backward
include, this does not. Exits 1 naming each include out of order.

usage: check_layers.py SOURCE_DIR [--apart A:B ...]
  --apart A:B  A may not include B even though B comes before it (train and sweep: both use the
               worker part, and neither reaches into the other for it)."""
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


def main(argv):
    apart = set()
    args = []
    it = iter(argv)
    for a in it:
        if a == "--apart":
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
    for w in wrong:
        print(w)
    if wrong:
        return 1
    print(f"{len(order)} parts in layer order: {' < '.join(order)}"
          + "".join(f"; {a} apart from {b}" for a, b in sorted(apart)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

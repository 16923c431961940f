"""The GPU check's table: tune's winner against each hand-tuned peer of the same run.

    python bench/gpu_table.py TUNE_JSON PEERS_JSON

TUNE_JSON is `torchperf tune --json`'s output, PEERS_JSON bench/gpu_peers.py's. Prints a Markdown
table: each row's samples/s and the winner's figure over it; exits 1 when the winner is slower than
the best peer, or either side is missing.
"""

import json
import sys


def winner_of(summary):
    """The winner's key and samples/s: its full measurement (a point is measured briefly first,
    then again in full as a finalist)."""
    key = summary.get("winner")
    records = [p for p in summary.get("points", []) if p.get("key") == key and p.get("metrics")]
    if not key or not records:
        return None, None
    full = [p for p in records if not p.get("brief")] or records
    return key, full[-1]["metrics"].get("throughput_samples_per_s")


def main():
    with open(sys.argv[1]) as f:
        text = f.read()
    try:
        summary = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        summary = {}
    with open(sys.argv[2]) as f:
        peers = [p for p in json.load(f) if "samples_per_s" in p]
    key, winner = winner_of(summary)
    print("| who | configuration | samples/s | tune's winner over it |")
    print("| --- | --- | --- | --- |")
    if winner:
        print(f"| `torchperf tune` | {key} | **{winner:,.0f}** | 1.000 |")
    else:
        print(f"| `torchperf tune` | no winner ({summary.get('winner_note', 'no output')}) | - | - |")
    for p in peers:
        ratio = f"{winner / p['samples_per_s']:.3f}" if winner else "-"
        print(f"| PyTorch by hand | {p['peer']} (IQR {p['iqr_ms']:.3f} ms, first call "
              f"{p['first_call_s']:.1f} s) | {p['samples_per_s']:,.0f} | {ratio} |")
    if not winner or not peers:
        return 1
    best = max(peers, key=lambda p: p["samples_per_s"])
    ratio = winner / best["samples_per_s"]
    print(f"\ntune's winner over the best peer ({best['peer']}): {ratio:.3f}")
    return 0 if ratio >= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
